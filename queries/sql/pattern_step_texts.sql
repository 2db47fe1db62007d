-- The text of the listed steps ($runs[i], $steps[i]): a cluster's example steps and the steps
-- its top terms are read from.
WITH wanted AS (
    SELECT unnest($runs) AS run_id, unnest($steps)::BIGINT AS step_idx
)
SELECT s.run_id, s.step_idx, coalesce(s.text_in, '') AS text_in, coalesce(s.text_out, '') AS text_out
FROM steps s JOIN wanted w ON s.run_id = w.run_id AND s.step_idx = w.step_idx
WHERE s.run_id IN @each($run_ids)
ORDER BY s.run_id, s.step_idx
