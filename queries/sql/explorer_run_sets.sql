-- The step-level prediction sets that score this run (the detector choices for its graph).
SELECT ps.set_id, ps.method, ps.family, ps.supervision, ps.protocol, ps.model, ps.seed, ps.origin,
       p.n_scored, p.min_score, p.max_score
FROM (
    SELECT set_id, count(*) AS n_scored, min(score) AS min_score, max(score) AS max_score
    FROM predictions
    WHERE run_id = $run AND step_idx IS NOT NULL
    GROUP BY set_id
) p
JOIN prediction_sets ps USING (set_id)
ORDER BY ps.set_id
