-- One run, for the explorer's header: its run row plus the step counts the run list shows.
-- chain_length: the most failed steps in one scope, when they form a chain (2 or more), else 0
-- (shared/specs/analyses.md, "Propagation chains").
WITH per_scope AS (
    SELECT scope, count(*) FILTER (WHERE label = 1) AS failed, count(*) AS steps,
           count(label) AS labeled
    FROM steps WHERE run_id = $run
    GROUP BY scope
)
SELECT r.*,
       coalesce((SELECT sum(failed) FROM per_scope), 0)::BIGINT AS anomalous_steps,
       coalesce((SELECT sum(labeled) FROM per_scope), 0)::BIGINT AS labeled_steps,
       coalesce((SELECT max(failed) FROM per_scope WHERE failed >= 2), 0)::BIGINT AS chain_length,
       (SELECT count(*) FROM per_scope)::BIGINT AS n_scopes
FROM runs r
WHERE r.run_id = $run
