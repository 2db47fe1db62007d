-- How many runs the detection population of run_prefix_features.sql holds before any sample:
-- runs of the slice with a known outcome and at least $min_steps steps.
WITH @slice
SELECT count(*) AS runs
FROM sliced_runs r
WHERE @known_outcome AND r.n_steps >= greatest($min_steps, 1)
