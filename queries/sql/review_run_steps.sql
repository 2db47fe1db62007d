-- The steps of each run of the slice, in run number order (_review_step_numbers.sql): what the
-- review flags number the slice's steps by.
WITH @slice
SELECT CAST(n_steps AS BIGINT) AS n_steps FROM sliced_runs ORDER BY run_id
