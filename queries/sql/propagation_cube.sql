-- The Propagation heatmap's numerators (propagation_heatmap.sql) counted per slice cell:
-- (corpus, backbone, difficulty, temperature, domain, outcome, source action, later action).
-- Every slice column is a run's, and a scope lies within one run, so a slice takes whole cells
-- and a slice's heatmap adds up a few rows (propagation_heatmap_cube.sql) instead of joining
-- the failed steps of every chain again. Kept on disk per store version (queries/derived.py).
WITH failed AS (
    SELECT corpus, backbone, difficulty, temperature, domain, outcome, run_id, scope, step_idx,
           coalesce(action, '(none)') AS action
    FROM steps
    WHERE chain_role IS NOT NULL
),
last_failed AS (
    SELECT run_id, scope, action, max(step_idx) AS last_idx
    FROM failed
    GROUP BY ALL
)
SELECT f.corpus, f.backbone, f.difficulty, f.temperature, f.domain, f.outcome,
       f.action AS src_action, l.action AS later_action, count(*) AS followed
FROM failed f
JOIN last_failed l
  ON l.run_id = f.run_id AND l.scope IS NOT DISTINCT FROM f.scope AND l.last_idx > f.step_idx
GROUP BY ALL
