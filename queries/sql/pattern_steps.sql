-- The steps of the runs at positions [$lo, $hi) of pattern_runs.sql in (run, step) order: their
-- text, action and agent codes (1-based in $actions / $agents, 0 for none, as in
-- step_features.sql) and the detectors' per-step feature columns (_step_feature_values.sql).
-- Read in chunks of runs, so building the vectors never holds a whole store's text. $run_from
-- and $run_to are the chunk's first and last run id (NULL: not known), as in step_features.sql.
WITH run_keys AS (
    SELECT run_id, n_steps,
           (CASE WHEN $run_from IS NULL THEN 0 ELSE $lo END + row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos
    FROM runs r
    WHERE ($run_from IS NULL OR r.run_id >= $run_from) AND ($run_to IS NULL OR r.run_id <= $run_to)
)
SELECT k.run_pos,
       s.step_idx,
       s.label::DOUBLE AS label,
       coalesce(list_position($actions, s.action), 0)::INTEGER AS action_code,
       coalesce(list_position($agents, s.agent), 0)::INTEGER AS agent_code,
       coalesce(s.text_in, '') AS text_in,
       coalesce(s.text_out, '') AS text_out,
       @step_feature_values
FROM steps s JOIN run_keys k ON s.run_id = k.run_id
WHERE k.run_pos >= $lo AND k.run_pos < $hi AND ($run_from IS NULL OR s.run_id >= $run_from) AND ($run_to IS NULL OR s.run_id <= $run_to)
ORDER BY k.run_pos, s.step_idx
