-- The doubt order (auditatlas/analyses/review_queue.py): the labeled steps of the slice whose
-- label either half doubts, most doubtful first.
-- Label-free half: the top decile counts of _review_set_flags.sql (n_sets, n_top),
-- `contradicting` (the sets that say otherwise than the label: a labeled normal step in their
-- top decile, a labeled anomaly not), `share` (their share of the sets scoring the step; null
-- where none does); it doubts a labeled normal step most sets flag and a labeled anomaly that
-- sets score and none flags (`free_contradicts`).
-- Supervised half: the caller's table $supervised (run_id, step_idx, self_confidence,
-- label_issue), one row per step it could be computed on; it doubts cleanlab's label issues.
-- `doubt`: one minus the out-of-fold probability of the label where the supervised half has the
-- step, else the label-free share. Ties: the share, the sets contradicting, then run and step, so
-- the order is the same on every run.
WITH @slice,
@review_set_flags,
labeled AS (
    SELECT s.corpus, s.run_id, s.step_idx, s.label, coalesce(f.n_sets, 0) AS n_sets,
           coalesce(f.n_top, 0) AS n_top,
           CASE WHEN s.label = 0 THEN coalesce(f.n_top, 0) ELSE coalesce(f.n_sets - f.n_top, 0) END
               AS contradicting,
           CASE WHEN f.n_sets > 0 THEN (CASE WHEN s.label = 0 THEN f.n_top ELSE f.n_sets - f.n_top END) / f.n_sets END
               AS share
    FROM sliced_steps s
    LEFT JOIN review_flags f ON f.run_id = s.run_id AND f.step_idx = s.step_idx
    WHERE s.label IS NOT NULL
),
judged AS (
    SELECT l.*, CAST(h.self_confidence AS DOUBLE) AS self_confidence,
           coalesce(CAST(h.label_issue AS BOOLEAN), false) AS label_issue,
           coalesce((l.label = 0 AND 2 * l.n_top > l.n_sets) OR (l.label = 1 AND l.n_top = 0 AND l.n_sets > 0), false)
               AS free_contradicts
    FROM labeled l
    LEFT JOIN @frame($supervised) h ON CAST(h.run_id AS VARCHAR) = l.run_id AND CAST(h.step_idx AS BIGINT) = l.step_idx
)
SELECT *, coalesce(1 - self_confidence, CASE WHEN free_contradicts THEN share END) AS doubt
FROM judged
WHERE free_contradicts OR label_issue
ORDER BY doubt DESC NULLS LAST, share DESC NULLS LAST, contradicting DESC, run_id, step_idx
