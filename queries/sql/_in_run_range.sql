-- The row's run_id within a chunk's first and last run id, $run_from and $run_to
-- (step_feature_chunks.sql; NULL: unbounded). Written on the scan of a table (steps, edges,
-- runs) so the Parquet row groups outside the chunk are skipped by their run id statistics.
($run_from IS NULL OR run_id >= $run_from) AND ($run_to IS NULL OR run_id <= $run_to)
