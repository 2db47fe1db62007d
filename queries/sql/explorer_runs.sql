-- One page of the run list of the slice, sorted and filtered on run columns only: the runs
-- are paged first (a scan of the small runs table), then the step counts are computed for
-- the page's runs alone, so the answer costs about the same for a thousand runs or a million.
-- (Sorting or filtering on the counts needs them for every run: explorer_runs_by_counts.sql.)
-- Columns and parameters as in explorer_runs_by_counts.sql; $sort is a run column here. The
-- number of runs that pass the filters is explorer_runs_count.sql (a window count here would
-- materialise every run of the slice).
WITH @slice,
listed AS (
    SELECT r.run_id AS run, r.corpus, r.backbone, r.difficulty, r.outcome, r.n_steps AS steps
    FROM sliced_runs r
    WHERE @run_filters
),
page AS (
    SELECT *,
           CASE $sort WHEN 'run' THEN run WHEN 'corpus' THEN corpus WHEN 'backbone' THEN backbone
                      WHEN 'difficulty' THEN difficulty WHEN 'outcome' THEN outcome END AS text_key,
           CASE $sort WHEN 'steps' THEN steps END AS number_key
    FROM listed
    ORDER BY
        CASE WHEN NOT $descending THEN text_key END ASC NULLS LAST,
        CASE WHEN $descending THEN text_key END DESC NULLS LAST,
        CASE WHEN NOT $descending THEN number_key END ASC NULLS LAST,
        CASE WHEN $descending THEN number_key END DESC NULLS LAST,
        run
    LIMIT $limit OFFSET $offset
),
failed AS (
    SELECT s.run_id, s.scope, count(*) AS n
    FROM page p
    JOIN steps s ON s.run_id = p.run
    WHERE s.label = 1
    GROUP BY s.run_id, s.scope
),
per_run AS (
    SELECT run_id, sum(n)::BIGINT AS anomalous_steps,
           max(CASE WHEN n >= 2 THEN n ELSE 0 END)::BIGINT AS chain_length
    FROM failed
    GROUP BY run_id
)
SELECT p.run, p.corpus, p.backbone, p.difficulty, p.outcome, p.steps,
       coalesce(f.anomalous_steps, 0) AS anomalous_steps,
       coalesce(f.chain_length, 0) AS chain_length,
FROM page p
LEFT JOIN per_run f ON f.run_id = p.run
ORDER BY
    CASE WHEN NOT $descending THEN p.text_key END ASC NULLS LAST,
    CASE WHEN $descending THEN p.text_key END DESC NULLS LAST,
    CASE WHEN NOT $descending THEN p.number_key END ASC NULLS LAST,
    CASE WHEN $descending THEN p.number_key END DESC NULLS LAST,
    p.run
