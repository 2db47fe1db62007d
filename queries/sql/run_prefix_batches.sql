-- The first run id of each batch of $batch runs of the detection population of
-- run_prefix_features.sql (runs of the slice with a known outcome and at least $min_steps steps),
-- in run id order: the boards read that population a batch at a time.
WITH @slice
SELECT run_id
FROM (SELECT r.run_id, row_number() OVER (ORDER BY r.run_id) - 1 AS i
      FROM sliced_runs r
      WHERE @known_outcome AND r.n_steps >= greatest($min_steps, 1))
WHERE i % $batch = 0
ORDER BY run_id
