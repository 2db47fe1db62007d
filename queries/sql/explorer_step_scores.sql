-- The chosen step's score and rank in every step-level prediction set that scores its run
-- (a set that scores the run but not this step shows an empty score).
WITH sets AS (
    SELECT DISTINCT set_id FROM predictions WHERE run_id = $run AND step_idx IS NOT NULL
),
n AS (
    SELECT set_id, count(*) AS n_scored FROM predictions
    WHERE run_id = $run AND step_idx IS NOT NULL GROUP BY set_id
)
SELECT ps.set_id, p.rank, p.score, n.n_scored, p.pred_label, ps.method, ps.protocol, ps.model, ps.seed
FROM sets
JOIN prediction_sets ps USING (set_id)
JOIN n USING (set_id)
LEFT JOIN predictions p ON p.set_id = sets.set_id AND p.run_id = $run AND p.step_idx = $step
ORDER BY p.rank NULLS LAST, ps.set_id
