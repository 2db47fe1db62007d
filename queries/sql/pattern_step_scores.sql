-- Every step-level prediction set's score for the listed steps ($runs[i], $steps[i]): the
-- detectors' scores beside each of "steps like this one" and of a cluster's examples.
-- The run ids are bound one by one so DuckDB prunes the predictions' row groups.
WITH wanted AS (
    SELECT unnest($runs) AS run_id, unnest($steps)::BIGINT AS step_idx
)
SELECT p.set_id, p.run_id, p.step_idx, p.score
FROM predictions p JOIN wanted w ON p.run_id = w.run_id AND p.step_idx = w.step_idx
WHERE p.run_id IN @each($run_ids) AND p.step_idx IS NOT NULL
ORDER BY p.set_id, p.run_id, p.step_idx
