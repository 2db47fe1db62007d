-- The position the first run of a chunk's run range takes: $lo when the range is bound
-- ($run_from), 0 when the runs are numbered over all of them.
CASE WHEN $run_from IS NULL THEN 0 ELSE $lo END
