-- The steps of the runs at positions [$lo, $hi) of pattern_runs.sql in (run, step) order: their
-- text, action and agent codes (1-based in $actions / $agents, 0 for none, as in
-- step_features.sql) and the detectors' per-step feature columns (_step_feature_values.sql).
-- Read in chunks of runs, so building the vectors never holds a whole store's text. $run_from
-- and $run_to are the chunk's first and last run id (NULL: not known), as in step_features.sql.
WITH run_keys AS (
    SELECT run_id, n_steps,
           (@first_run_pos + row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos
    FROM runs
    WHERE @in_run_range
)
SELECT k.run_pos,
       s.step_idx,
       s.label::DOUBLE AS label,
       coalesce(list_position($actions, s.action), 0)::INTEGER AS action_code,
       coalesce(list_position($agents, s.agent), 0)::INTEGER AS agent_code,
       coalesce(s.text_in, '') AS text_in,
       coalesce(s.text_out, '') AS text_out,
       @step_feature_values
FROM (SELECT * FROM steps WHERE @in_run_range) s JOIN run_keys k ON s.run_id = k.run_id
WHERE k.run_pos >= $lo AND k.run_pos < $hi
ORDER BY k.run_pos, s.step_idx
