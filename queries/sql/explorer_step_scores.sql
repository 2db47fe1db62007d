-- The chosen step's score and rank in every step-level prediction set that scores its run
-- (a set that scores the run but not this step shows an empty score). The run's predictions
-- are read once (materialized): three scans of them were three times the time at a million
-- rooms.
WITH r AS MATERIALIZED (
    SELECT set_id, step_idx, rank, score, pred_label FROM predictions WHERE run_id = $run AND step_idx IS NOT NULL
),
n AS (
    SELECT set_id, count(*) AS n_scored FROM r GROUP BY set_id
)
SELECT ps.set_id, p.rank, p.score, n.n_scored, p.pred_label, ps.method, ps.protocol, ps.model, ps.seed
FROM n
JOIN prediction_sets ps USING (set_id)
LEFT JOIN r p ON p.set_id = n.set_id AND p.step_idx = $step
ORDER BY p.rank NULLS LAST, ps.set_id
