-- Per corpus of the slice: runs, steps and step labels (anomalous, normal, unlabeled), so a
-- re-score can say up front why a slice cannot be scored (no anomaly or no normal step).
WITH @slice
SELECT r.corpus,
       count(DISTINCT r.run_id) AS runs,
       count(s.step_idx) AS steps,
       count(s.step_idx) FILTER (WHERE s.label = 1) AS positives,
       count(s.step_idx) FILTER (WHERE s.label = 0) AS negatives,
       count(s.step_idx) FILTER (WHERE s.step_idx IS NOT NULL AND s.label IS NULL) AS unlabeled
FROM sliced_runs r
LEFT JOIN steps s ON s.run_id = r.run_id
GROUP BY r.corpus
ORDER BY r.corpus
