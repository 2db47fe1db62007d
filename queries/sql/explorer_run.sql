-- One run, for the explorer's header: its run row (with the counts the store writer put on it:
-- anomalous_steps, chain_length) plus its labeled steps and scopes.
WITH per_scope AS (
    SELECT scope, count(label) AS labeled
    FROM steps WHERE run_id = $run
    GROUP BY scope
)
SELECT r.*,
       coalesce((SELECT sum(labeled) FROM per_scope), 0)::BIGINT AS labeled_steps,
       (SELECT count(*) FROM per_scope)::BIGINT AS n_scopes
FROM runs r
WHERE r.run_id = $run
