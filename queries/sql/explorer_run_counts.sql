-- Step counts of the runs $run_ids (one page of the run list): anomalous steps and chain
-- length (the most failed steps in one scope, when they form a chain of 2 or more; else 0).
-- Only runs with an anomaly get a row. list_contains on the bound ids is pushed into the
-- Parquet scan, so only the row groups of these runs are read (steps are sorted by run).
WITH failed AS (
    SELECT s.run_id, s.scope, count(*) AS n
    FROM steps s
    WHERE s.label = 1 AND list_contains($run_ids, s.run_id)
    GROUP BY s.run_id, s.scope
)
SELECT run_id AS run, sum(n)::BIGINT AS anomalous_steps,
       max(CASE WHEN n >= 2 THEN n ELSE 0 END)::BIGINT AS chain_length
FROM failed
GROUP BY run_id
