-- The Propagation heatmap's numerators (propagation_heatmap.sql) per slice cell: (corpus,
-- backbone, difficulty, temperature, domain, outcome, source action, later action), over every
-- step. A slice takes whole cells, so its heatmap adds up a few rows
-- (propagation_heatmap_cube.sql) instead of joining the failed steps of every chain again.
-- Kept on disk per store version (queries/derived.py).
WITH sliced_steps AS (SELECT * FROM steps),
@propagation_followed
SELECT * FROM followed
