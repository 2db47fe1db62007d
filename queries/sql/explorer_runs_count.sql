-- How many runs of the slice pass the run list's filters (explorer_runs.sql).
WITH @slice
SELECT count(*) AS total
FROM sliced_runs r
WHERE @run_filters
