-- Corpora with at least one failed run that has a labeled anomalous step (POST localization).
-- A run's anomalous_steps counts its steps labeled 1 (a write's invariant; each label choice's
-- runs count its own labels), so the steps need not be joined (every step read at a million rooms).
SELECT DISTINCT corpus
FROM runs
WHERE outcome = 'failure' AND anomalous_steps > 0
ORDER BY (corpus = 'whowhen') DESC, corpus
