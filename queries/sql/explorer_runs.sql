-- One page of the run list of the slice, sorted and filtered on run columns only: a scan of
-- the small runs table. The page's step counts (anomalous steps, chain length) are a second
-- query over its run ids alone (explorer_run_counts.sql; auditatlas.runlist.run_page joins
-- them): bound as a list, the ids prune the steps scan to the page's row groups, which a join
-- to the page inside one query did not (0.41 s at a million rooms, against 14 ms).
-- (Sorting or filtering on the counts needs them for every run: explorer_runs_by_counts.sql.)
-- Columns and parameters as in explorer_runs_by_counts.sql, without the counts; $sort is a run
-- column here. The number of runs that pass the filters is explorer_runs_count.sql.
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
)
SELECT run, corpus, backbone, difficulty, outcome, steps
FROM page
ORDER BY
    CASE WHEN NOT $descending THEN text_key END ASC NULLS LAST,
    CASE WHEN $descending THEN text_key END DESC NULLS LAST,
    CASE WHEN NOT $descending THEN number_key END ASC NULLS LAST,
    CASE WHEN $descending THEN number_key END DESC NULLS LAST,
    run
