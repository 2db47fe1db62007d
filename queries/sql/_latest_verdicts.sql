-- CTE latest_verdicts: the latest verdict per step (auditatlas/reviews.py), the one rule every
-- reader of the verdicts uses. Latest = latest reviewed_at; verdicts given in the same
-- microsecond are ordered by verdict_id (arbitrary, but the same on every read). `label`:
-- 1 anomaly, 0 normal, NULL unsure; n_verdicts and n_reviewers count the step's history.
latest_verdicts AS (
    SELECT * EXCLUDE (newest),
           CAST(CASE verdict WHEN 'anomaly' THEN 1 WHEN 'normal' THEN 0 END AS TINYINT) AS label
    FROM (
        SELECT v.*,
               row_number() OVER (PARTITION BY v.run_id, v.step_idx
                                  ORDER BY v.reviewed_at DESC, v.verdict_id DESC) AS newest,
               count(*) OVER (PARTITION BY v.run_id, v.step_idx) AS n_verdicts,
               count(DISTINCT v.reviewer) OVER (PARTITION BY v.run_id, v.step_idx) AS n_reviewers
        FROM verdicts v
    )
    WHERE newest = 1
)
