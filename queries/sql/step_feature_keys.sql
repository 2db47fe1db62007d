-- The keys of every step of the slice without its features: run_pos (as in
-- step_feature_runs.sql), step_idx, label and action_code (as in step_features.sql). What the
-- detector engine plans its splits and fits on before it reads the features of a large corpus
-- a chunk of runs at a time. Only the runs at positions [$lo, $hi); $run_from and $run_to as in
-- step_features.sql.
WITH @slice,
run_keys AS (
    SELECT * FROM (SELECT run_id,
                          (@first_run_pos + row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos
                   FROM sliced_runs WHERE @in_run_range)
    WHERE run_pos >= $lo AND run_pos < $hi
)
SELECT k.run_pos, s.step_idx, s.label::DOUBLE AS label,
       coalesce(list_position($actions, s.action), 0)::INTEGER AS action_code
FROM (SELECT * FROM steps WHERE @in_run_range) s
JOIN run_keys k ON s.run_id = k.run_id
