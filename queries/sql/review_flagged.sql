-- Flagged but unlabeled: unlabeled steps that most sets put in their top decile
-- (_review_set_flags.sql), the larger share first; then the more sets; then run and step.
WITH @slice,
@review_set_flags
SELECT corpus, run_id, step_idx, label, n_sets, n_top, n_top / n_sets AS share
FROM review_flags
WHERE label IS NULL AND 2 * n_top > n_sets
ORDER BY share DESC, n_top DESC, run_id, step_idx
