-- The label of each listed step ($runs[i], $steps[i]) under the label choice the query is asked
-- with (queries/labels.py): what a view built from a cache of released labels (the search index,
-- the step vectors) shows beside its hits instead. A listed step the store does not hold is left out.
WITH wanted AS (
    SELECT unnest($runs) AS run_id, unnest($steps)::BIGINT AS step_idx
)
SELECT s.run_id, s.step_idx, s.label
FROM steps s JOIN wanted w ON s.run_id = w.run_id AND s.step_idx = w.step_idx
WHERE s.run_id IN @each($run_ids)
ORDER BY s.run_id, s.step_idx
