-- The chains behind one heatmap cell (backbone, source action, later action): one row per
-- failed source step that a later failed step of the later action follows in its scope (the
-- cell's numerator, counted as in propagation_heatmap: the scope's last failed step of the
-- later action comes after it), with the whole chain of that scope. Paged: $limit rows from
-- $offset; `total` is the number of rows before paging.
WITH @slice,
in_chains AS (  -- the failed steps of the slice's chains (steps.chain_role, written by the store writer)
    SELECT coalesce(backbone, '(none)') AS backbone, run_id, scope, step_idx,
           coalesce(action, '(none)') AS action
    FROM sliced_steps
    WHERE chain_role IS NOT NULL AND coalesce(backbone, '(none)') = $cell_backbone  -- a scope lies within one run, so one backbone
),
last_later AS (
    SELECT run_id, scope, max(step_idx) AS last_idx
    FROM in_chains
    WHERE action = $later_action
    GROUP BY ALL
),
sources AS (
    SELECT f.backbone, f.run_id, f.scope, f.step_idx
    FROM in_chains f
    JOIN last_later l ON l.run_id = f.run_id AND l.scope IS NOT DISTINCT FROM f.scope AND l.last_idx > f.step_idx
    WHERE f.action = $src_action
),
page AS (
    SELECT *, count(*) OVER () AS total
    FROM sources
    ORDER BY run_id, scope, step_idx
    LIMIT $limit OFFSET $offset
),
chains AS (
    SELECT c.run_id, c.scope,
           count(*) AS length,
           list(c.step_idx ORDER BY c.step_idx) AS steps,
           list(c.action ORDER BY c.step_idx) AS actions
    FROM in_chains c
    WHERE c.run_id IN (SELECT run_id FROM page)
    GROUP BY ALL
)
SELECT p.backbone, p.run_id, p.scope, p.step_idx AS source_step,
       c.length, c.steps, c.actions, p.total
FROM page p
JOIN chains c ON c.run_id = p.run_id AND c.scope IS NOT DISTINCT FROM p.scope
ORDER BY p.run_id, p.scope, p.step_idx
