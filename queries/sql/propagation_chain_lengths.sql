-- How long the chains of the slice are, per backbone (and which action they start from), for
-- the chain browser's distribution and its origin-action filter.
WITH @slice,
failed AS (
    SELECT coalesce(backbone, '(none)') AS backbone, run_id, scope, step_idx,
           coalesce(action, '(none)') AS action
    FROM sliced_steps
    WHERE label = 1
),
chains AS (
    SELECT backbone, run_id, scope, count(*) AS length, arg_min(action, step_idx) AS origin_action
    FROM failed
    GROUP BY ALL
    HAVING count(*) >= 2
)
SELECT backbone, origin_action, length, count(*) AS chains
FROM chains
GROUP BY ALL
ORDER BY backbone, origin_action, length
