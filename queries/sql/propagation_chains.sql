-- The chain browser: every chain of the slice (one per origin step: steps.chain_role and
-- chain_length, written by the store writer from auditatlas/chains.py), filtered on its
-- origin action ($origin_actions, empty = all) and length ($min_length..$max_length, null =
-- unbounded). Paged: $limit rows from $offset; `total` counts the chains before paging.
-- The step and action lists are built for the page's chains only.
WITH @slice,
chains AS (
    SELECT coalesce(backbone, '(none)') AS backbone, run_id, scope,
           chain_length AS length,
           coalesce(action, '(none)') AS origin_action,
           step_idx AS origin_step
    FROM sliced_steps
    WHERE chain_role = 'origin'
),
page AS (
    SELECT *, count(*) OVER () AS total
    FROM chains
    WHERE (len($origin_actions) = 0 OR list_contains($origin_actions, origin_action))
      AND ($min_length IS NULL OR length >= $min_length)
      AND ($max_length IS NULL OR length <= $max_length)
    ORDER BY run_id, scope
    LIMIT $limit OFFSET $offset
),
members AS (
    SELECT s.run_id, s.scope,
           list(s.step_idx ORDER BY s.step_idx) AS steps,
           list(coalesce(s.action, '(none)') ORDER BY s.step_idx) AS actions
    FROM sliced_steps s
    WHERE s.chain_role IS NOT NULL AND s.run_id IN (SELECT run_id FROM page)
    GROUP BY ALL
)
SELECT p.backbone, p.run_id, p.scope, p.length, p.origin_action, p.origin_step, m.steps, m.actions, p.total
FROM page p
JOIN members m ON m.run_id = p.run_id AND m.scope IS NOT DISTINCT FROM p.scope
ORDER BY p.run_id, p.scope
