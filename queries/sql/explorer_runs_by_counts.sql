-- One page of the run list of the slice, when it is sorted or filtered on the step counts
-- (anomalous steps, chain length): those are computed for every run of the slice first.
-- Sorted or filtered on run columns only, explorer_runs.sql pages the runs first instead.
-- Columns: run, corpus, backbone, difficulty, outcome, steps, anomalous steps, chain length
-- (the most failed steps in one scope, when they form a chain of 2 or more; else 0).
-- Filters (each empty/NULL = no filter): $run_q (case-insensitive substring of the run id),
-- $f_corpus/$f_backbone/$f_difficulty/$f_outcome (lists), $min_/$max_ steps, anomalous, chain.
-- $sort names the column (one of the output column names), $descending its direction; ties
-- fall back to run_id so pages never overlap. $limit/$offset page it; `total` is the number
-- of runs that pass the filters.
-- Only the anomalous steps are aggregated (label = 1: a few percent of the steps), so the
-- per-run counts stay cheap however large the slice.
WITH @slice,
failed AS (
    SELECT run_id, scope, count(*) AS n
    FROM sliced_steps
    WHERE label = 1
    GROUP BY run_id, scope
),
@run_counts,
listed AS (
    SELECT r.run_id AS run, r.corpus, r.backbone, r.difficulty, r.outcome, r.n_steps AS steps,
           coalesce(p.anomalous_steps, 0) AS anomalous_steps,
           coalesce(p.chain_length, 0) AS chain_length
    FROM sliced_runs r
    LEFT JOIN per_run p USING (run_id)
    WHERE @run_filters
),
filtered AS (
    SELECT * FROM listed
    WHERE ($min_anomalous IS NULL OR anomalous_steps >= $min_anomalous)
      AND ($max_anomalous IS NULL OR anomalous_steps <= $max_anomalous)
      AND ($min_chain IS NULL OR chain_length >= $min_chain)
      AND ($max_chain IS NULL OR chain_length <= $max_chain)
)
SELECT *, count(*) OVER () AS total
FROM filtered
ORDER BY
    CASE WHEN NOT $descending THEN
        CASE $sort WHEN 'run' THEN run WHEN 'corpus' THEN corpus WHEN 'backbone' THEN backbone
                   WHEN 'difficulty' THEN difficulty WHEN 'outcome' THEN outcome END
    END ASC NULLS LAST,
    CASE WHEN $descending THEN
        CASE $sort WHEN 'run' THEN run WHEN 'corpus' THEN corpus WHEN 'backbone' THEN backbone
                   WHEN 'difficulty' THEN difficulty WHEN 'outcome' THEN outcome END
    END DESC NULLS LAST,
    CASE WHEN NOT $descending THEN
        CASE $sort WHEN 'steps' THEN steps WHEN 'anomalous_steps' THEN anomalous_steps
                   WHEN 'chain_length' THEN chain_length END
    END ASC NULLS LAST,
    CASE WHEN $descending THEN
        CASE $sort WHEN 'steps' THEN steps WHEN 'anomalous_steps' THEN anomalous_steps
                   WHEN 'chain_length' THEN chain_length END
    END DESC NULLS LAST,
    run
LIMIT $limit OFFSET $offset
