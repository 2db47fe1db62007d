-- The latest verdict per step (auditatlas/reviews.py; the rule is _latest_verdicts.sql): what
-- `labels=reviewed` puts in place of the released label where a reviewer gave one
-- (queries/labels.py). `label`: 1 anomaly, 0 normal, NULL unsure (the step stays undecided).
-- `released_label` and `orphaned` come from the step as stored now: a verdict on a step a
-- re-ingest dropped is kept and shows as orphaned, never silently gone.
WITH @latest_verdicts
SELECT r.corpus, r.run_id, r.step_idx, r.verdict, r.label,
       r.failure_mode, r.note, r.reviewer, r.reviewed_at, r.queue, r.seed,
       r.n_verdicts, r.n_reviewers,
       s.label AS released_label, s.label_source AS released_source,
       s.step_idx IS NULL AS orphaned
FROM latest_verdicts r
LEFT JOIN steps s ON s.run_id = r.run_id AND s.step_idx = r.step_idx
ORDER BY r.run_id, r.step_idx
