-- The native step id and agent of the steps a cell's error list shows (grid_errors.sql lists
-- run and step index). The each-list below binds each run id as its own parameter: an IN list of
-- values lets DuckDB skip every row group of the run-sorted steps that holds none of them,
-- where a join or "= ANY(list)" reads them all (at a million rooms, 0.09 s against 1.4 s).
SELECT run_id, step_idx, step_id, agent
FROM steps
WHERE run_id IN @each($run_ids)
