-- The corpora of the slice holding labeled steps: what the supervised half of label doubt is
-- computed on (auditatlas/analyses/label_doubt.py), one corpus at a time.
WITH @slice
SELECT DISTINCT corpus FROM sliced_steps WHERE label IS NOT NULL ORDER BY corpus
