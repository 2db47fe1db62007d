-- One prediction set's scores of the slice's steps, by step number (_review_step_numbers.sql).
-- A prediction counts when its step is one of the run's (its index below the run's n_steps);
-- a step scored twice keeps its highest score (auditatlas/analyses/review_flags.py).
WITH @slice,
@review_step_numbers
SELECT k.first_step + p.step_idx AS step_no, CAST(p.score AS DOUBLE) AS score
FROM predictions p
JOIN review_step_numbers k USING (run_id)
WHERE p.set_id = $set_id AND p.score IS NOT NULL AND p.step_idx >= 0 AND p.step_idx < k.n_steps
