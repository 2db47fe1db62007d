-- The rows every detector view scores (grid_cells, detector_overall, detector_coverage):
-- each chosen set's scored test steps of the slice that carry a label (test_scores.sql).
-- The set and string columns may be ENUMs in the materialised table: compare them as text.
FROM sliced_test_scores t
WHERE list_contains($set_ids, t.set_id::VARCHAR)
