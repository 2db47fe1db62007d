-- Label doubt: labeled normal steps that most sets put in their top decile, and labeled
-- anomalies that none does (_review_set_flags.sql). `contradicting`: the sets that say
-- otherwise than the label; `share`: their share of the sets scoring the step. Most doubtful
-- first; then the more sets contradicting; then run and step.
WITH @slice,
@review_set_flags
SELECT corpus, run_id, step_idx, label, n_sets, n_top,
       CASE WHEN label = 0 THEN n_top ELSE n_sets - n_top END AS contradicting,
       (CASE WHEN label = 0 THEN n_top ELSE n_sets - n_top END) / n_sets AS share
FROM review_flags
WHERE (label = 0 AND 2 * n_top > n_sets) OR (label = 1 AND n_top = 0)
ORDER BY share DESC, contradicting DESC, run_id, step_idx
