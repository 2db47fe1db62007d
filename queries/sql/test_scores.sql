-- Every scored test step of every step-level prediction set, joined once to its labeled step:
-- the rows the detector views rank (grid_cells, detector_overall, detector_coverage, through
-- the sliced_test_scores CTE of the slice). Test rows are split 'test', or 'all' for sets
-- without a split (judges); unlabeled steps and missing or NaN scores are left out.
-- The query layer keeps this as a table per store version (queries/__init__.py), or as this
-- live join when the store holds too many predictions to keep in memory.
SELECT p.set_id, s.corpus, p.run_id, p.step_idx, p.score, p.pred_label,
       s.label, s.action, s.scope_success,
       s.backbone, s.difficulty, s.temperature, s.domain, s.outcome
FROM predictions p
JOIN steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
WHERE p.step_idx IS NOT NULL
  AND p.split IN ('test', 'all')
  AND s.label IS NOT NULL
  AND p.score IS NOT NULL AND NOT isnan(p.score)
