-- What the detector views rest on, per prediction set: its labeled, scored test steps (split
-- 'test', or 'all' for sets without a split) in the shared slice, and the runs they come from.
WITH @slice
SELECT p.set_id,
       count(*) AS n_steps,
       count(*) FILTER (WHERE s.label = 1) AS n_pos,
       count(DISTINCT p.run_id) AS n_runs
FROM predictions p
JOIN sliced_steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
WHERE p.set_id = ANY($set_ids)
  AND p.step_idx IS NOT NULL
  AND p.split IN ('test', 'all')
  AND s.label IS NOT NULL
  AND p.score IS NOT NULL AND NOT isnan(p.score)
GROUP BY p.set_id
ORDER BY p.set_id
