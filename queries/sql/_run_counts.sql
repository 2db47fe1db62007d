-- The run list's per-run counts (explorer_runs_by_counts.sql, explorer_run_counts.sql), from a
-- CTE `failed` (run_id, scope, n = failed steps of that scope): anomalous steps, and chain
-- length = the most failed steps in one scope when they form a chain of 2 or more, else 0.
per_run AS (
    SELECT run_id, sum(n)::BIGINT AS anomalous_steps,
           max(CASE WHEN n >= 2 THEN n ELSE 0 END)::BIGINT AS chain_length
    FROM failed
    GROUP BY run_id
)
