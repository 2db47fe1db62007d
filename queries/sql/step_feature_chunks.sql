-- The first and last run id of each chunk of $chunk runs of step_feature_runs.sql (positions
-- [i * $chunk, (i + 1) * $chunk)), in chunk order. A chunked read of step_features.sql,
-- step_feature_keys.sql or step_texts.sql bounds its scans of steps and edges by them: each
-- read then touches its own runs' row groups, not every step of the corpus (a tenth of the
-- time at a million rooms).
WITH @slice
SELECT min(run_id) AS run_from, max(run_id) AS run_to
FROM (SELECT run_id, (row_number() OVER (ORDER BY run_id) - 1) // $chunk AS chunk FROM sliced_runs)
GROUP BY chunk
ORDER BY chunk
