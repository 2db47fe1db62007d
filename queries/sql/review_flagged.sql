-- Flagged but unlabeled: the caller's $flagged, the unlabeled steps of the slice most sets put in
-- their top decile, by run number (_review_step_numbers.sql) and step index, with their counts
-- (auditatlas/analyses/review_flags.py: n_sets, n_top); the larger share first; then the more
-- sets; then run and step.
WITH @slice,
@review_step_numbers
SELECT k.corpus, k.run_id, CAST(f.step_idx AS BIGINT) AS step_idx, CAST(NULL AS TINYINT) AS label,
       CAST(f.n_sets AS BIGINT) AS n_sets, CAST(f.n_top AS BIGINT) AS n_top, f.n_top / f.n_sets AS share
FROM @frame($flagged) f
JOIN review_step_numbers k USING (run_no)
ORDER BY share DESC, n_top DESC, run_id, step_idx
