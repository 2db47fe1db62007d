-- The chain browser: every chain of the slice (the sorted failed steps of one scope, kept
-- when there are at least two; auditatlas/chains.py is the one-run form), filtered on its
-- origin action ($origin_actions, empty = all) and length ($min_length..$max_length, null =
-- unbounded). Paged: $limit rows from $offset; `total` counts the chains before paging.
-- The step and action lists are built for the page's chains only.
WITH @slice,
failed AS (
    SELECT coalesce(backbone, '(none)') AS backbone, run_id, scope, step_idx,
           coalesce(action, '(none)') AS action
    FROM sliced_steps
    WHERE label = 1
),
chains AS (
    SELECT backbone, run_id, scope,
           count(*) AS length,
           arg_min(action, step_idx) AS origin_action,
           min(step_idx) AS origin_step
    FROM failed
    GROUP BY ALL
    HAVING count(*) >= 2
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
    SELECT f.run_id, f.scope,
           list(f.step_idx ORDER BY f.step_idx) AS steps,
           list(f.action ORDER BY f.step_idx) AS actions
    FROM failed f
    WHERE f.run_id IN (SELECT run_id FROM page)
    GROUP BY ALL
)
SELECT p.backbone, p.run_id, p.scope, p.length, p.origin_action, p.origin_step, m.steps, m.actions, p.total
FROM page p
JOIN members m ON m.run_id = p.run_id AND m.scope IS NOT DISTINCT FROM p.scope
ORDER BY p.run_id, p.scope
