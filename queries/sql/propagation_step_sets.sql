-- Step-level prediction sets about the corpora of the slice (the entrants of recall by role).
WITH @slice
SELECT ps.set_id, ps.corpus, ps.method, ps.family, ps.supervision, ps.model, ps.protocol, ps.seed, ps.origin
FROM prediction_sets ps
WHERE ps.granularity = 'step'
  AND ps.corpus IN (SELECT DISTINCT corpus FROM sliced_runs)
ORDER BY ps.corpus, ps.method, ps.seed, ps.set_id
