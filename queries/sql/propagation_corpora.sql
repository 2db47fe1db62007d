-- Per corpus of the slice: runs and how its failed steps fall into scopes. A corpus forms
-- chains only when some scope holds two or more failed steps; one whose runs carry a single
-- decisive step (Who&When) or no step labels (tau-bench; an unlabeled OTLP corpus) cannot, and the page says so instead
-- of drawing an empty map. Step counts and label sources come from propagation_sources
-- (auditatlas.propagation.corpora joins the two), so the steps are scanned once.
-- Read from the chain columns the store writer put on the steps, without grouping by scope:
-- a chain has one origin, and a failed step outside a chain is alone in its scope.
WITH @slice,
run_counts AS (
    SELECT corpus, count(*) AS runs, count(*) FILTER (WHERE @known_outcome) AS runs_with_outcome
    FROM sliced_runs GROUP BY ALL
),
chain_counts AS (
    SELECT corpus,
           count(*) FILTER (WHERE chain_role IS NULL OR chain_role = 'origin') AS scopes_with_failures,
           count(*) FILTER (WHERE chain_role = 'origin') AS chains,
           max(CASE WHEN chain_role IS NULL THEN 1 ELSE chain_length END) AS max_failures_in_scope
    FROM sliced_steps
    WHERE label = 1
    GROUP BY ALL
)
SELECT r.corpus, r.runs, r.runs_with_outcome,
       coalesce(c.scopes_with_failures, 0) AS scopes_with_failures,
       coalesce(c.chains, 0) AS chains,
       coalesce(c.max_failures_in_scope, 0) AS max_failures_in_scope
FROM run_counts r
LEFT JOIN chain_counts c USING (corpus)
ORDER BY r.corpus
