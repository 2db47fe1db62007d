-- One page of the run list of the slice: a scan of the runs table alone, whatever the sort or
-- filter (the step counts are run columns, written by the store writer at ingest: sorting on
-- them used to aggregate every run's failed steps, 0.6 s at a million rooms).
-- Columns: run, corpus, backbone, difficulty, outcome, steps, anomalous steps, chain length
-- (the most failed steps in one scope, when they form a chain of 2 or more; else 0).
-- Filters (each empty/NULL = no filter): $run_q (case-insensitive substring of the run id,
-- as the ILIKE pattern $run_pattern), $f_corpus/$f_backbone/$f_difficulty/$f_outcome
-- (lists), $min_/$max_ steps, anomalous, chain. $sort names the column (one of the output
-- column names), $descending its direction; ties fall back to the run id so pages never
-- overlap. $limit/$offset page it; explorer_runs_count.sql counts the runs that pass.
WITH @slice,
listed AS (
    SELECT r.run_id AS run, r.corpus, r.backbone, r.difficulty, r.outcome, r.n_steps AS steps,
           r.anomalous_steps, r.chain_length
    FROM sliced_runs r
    WHERE @run_filters
),
page AS (
    SELECT *,
           CASE $sort WHEN 'run' THEN run WHEN 'corpus' THEN corpus WHEN 'backbone' THEN backbone
                      WHEN 'difficulty' THEN difficulty WHEN 'outcome' THEN outcome END AS text_key,
           CASE $sort WHEN 'steps' THEN steps WHEN 'anomalous_steps' THEN anomalous_steps
                      WHEN 'chain_length' THEN chain_length END AS number_key
    FROM listed
    ORDER BY
        CASE WHEN NOT $descending THEN text_key END ASC NULLS LAST,
        CASE WHEN $descending THEN text_key END DESC NULLS LAST,
        CASE WHEN NOT $descending THEN number_key END ASC NULLS LAST,
        CASE WHEN $descending THEN number_key END DESC NULLS LAST,
        run
    LIMIT $limit OFFSET $offset
)
SELECT run, corpus, backbone, difficulty, outcome, steps, anomalous_steps, chain_length
FROM page
ORDER BY
    CASE WHEN NOT $descending THEN text_key END ASC NULLS LAST,
    CASE WHEN $descending THEN text_key END DESC NULLS LAST,
    CASE WHEN NOT $descending THEN number_key END ASC NULLS LAST,
    CASE WHEN $descending THEN number_key END DESC NULLS LAST,
    run
