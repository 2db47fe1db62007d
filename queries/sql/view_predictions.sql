-- Every prediction keyed to exactly one step, run or config capability: stored rows (ranked
-- by the store writer) and released rankings resolved once per store version.
SELECT set_id, corpus, run_id, step_idx, config_id, capability, score, pred_label, split, rank
FROM predictions_stored
UNION ALL
SELECT set_id, corpus, run_id, step_idx, config_id, capability, score, pred_label, split, rank
FROM predictions_resolved
