-- Declared capabilities of one PRE corpus with their excess labels.
SELECT config_id, cap_idx, name, type, permission_level, excess
FROM capabilities WHERE corpus = $corpus ORDER BY config_id, cap_idx
