-- Step counts of the runs $run_ids (one page of the run list): anomalous steps and chain
-- length (the most failed steps in one scope, when they form a chain of 2 or more; else 0).
-- Only runs with an anomaly get a row. list_contains on the bound ids is pushed into the
-- Parquet scan, so only the row groups of these runs are read (steps are sorted by run).
WITH failed AS (
    SELECT s.run_id, s.scope, count(*) AS n
    FROM steps s
    WHERE s.label = 1 AND list_contains($run_ids, s.run_id)
    GROUP BY s.run_id, s.scope
),
@run_counts
SELECT run_id AS run, anomalous_steps, chain_length
FROM per_run
