-- Corpora with at least one failed run that has a labeled anomalous step (POST localization).
SELECT DISTINCT r.corpus
FROM runs r JOIN steps s USING (run_id)
WHERE r.outcome = 'failure' AND s.label = 1
ORDER BY (r.corpus = 'whowhen') DESC, r.corpus
