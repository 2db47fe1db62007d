-- The latest verdict per step (auditatlas/reviews.py): what `labels=reviewed` puts in place of
-- the released label where a reviewer gave one. Latest = latest reviewed_at; verdicts given in
-- the same microsecond are ordered by verdict_id (arbitrary, but the same on every read).
-- `label`: 1 anomaly, 0 normal, NULL unsure (the step stays undecided). `released_label` and
-- `orphaned` come from the step as stored now: a verdict on a step a re-ingest dropped is kept
-- and shows as orphaned, never silently gone.
WITH ranked AS (
    SELECT v.*,
           row_number() OVER (PARTITION BY v.run_id, v.step_idx
                              ORDER BY v.reviewed_at DESC, v.verdict_id DESC) AS newest,
           count(*) OVER (PARTITION BY v.run_id, v.step_idx) AS n_verdicts,
           count(DISTINCT v.reviewer) OVER (PARTITION BY v.run_id, v.step_idx) AS n_reviewers
    FROM verdicts v
)
SELECT r.corpus, r.run_id, r.step_idx, r.verdict,
       CAST(CASE r.verdict WHEN 'anomaly' THEN 1 WHEN 'normal' THEN 0 END AS TINYINT) AS label,
       r.failure_mode, r.note, r.reviewer, r.reviewed_at, r.queue, r.seed,
       r.n_verdicts, r.n_reviewers,
       s.label AS released_label, s.label_source AS released_source,
       s.step_idx IS NULL AS orphaned
FROM ranked r
LEFT JOIN steps s ON s.run_id = r.run_id AND s.step_idx = r.step_idx
WHERE r.newest = 1
ORDER BY r.run_id, r.step_idx
