-- How many runs and steps the current slice rests on, per corpus.
WITH @slice
SELECT r.corpus,
       count(DISTINCT r.run_id) AS runs,
       count(s.run_id) AS steps,
       count(s.label) AS labeled_steps,
       count(*) FILTER (WHERE s.label = 1) AS anomalous_steps
FROM sliced_runs r LEFT JOIN steps s USING (run_id)
GROUP BY ALL
ORDER BY r.corpus
