-- Prediction sets of one corpus and granularity, with how many items each covers.
SELECT ps.*, coalesce(n.n_runs, 0) AS n_runs, coalesce(n.n_predictions, 0) AS n_predictions
FROM prediction_sets ps
LEFT JOIN (
    SELECT set_id, count(DISTINCT run_id) AS n_runs, count(*) AS n_predictions
    FROM predictions GROUP BY set_id
) n USING (set_id)
WHERE ps.corpus = $corpus AND ($granularity IS NULL OR ps.granularity = $granularity)
ORDER BY ps.set_id
