-- The rows every detector view scores (grid_cells, detector_overall, detector_coverage):
-- each chosen set's scored test steps of the slice that carry a label, joined to their step.
FROM predictions p
JOIN sliced_steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
WHERE p.set_id = ANY($set_ids)
  AND p.step_idx IS NOT NULL
  AND p.split IN ('test', 'all')
  AND s.label IS NOT NULL
  AND p.score IS NOT NULL AND NOT isnan(p.score)
