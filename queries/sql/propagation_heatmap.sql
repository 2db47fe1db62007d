-- Numerators of the propagation heatmap (MAADBench Figure 4; shared/specs/analyses.md).
-- Within one scope (same run and puzzle; the run for corpora without puzzles), a failed
-- source step s counts for later action a when some step of action a after s in the same
-- scope also failed. A scope's last failed step of action a decides that for every s, so s is
-- joined to one row per (scope, a): each (s, a) counts at most once. Cells absent here are 0.
-- Per corpus too: a corpus appears here exactly when it forms a chain in the slice.
-- A failed step followed by another in its scope is a step of a chain, so only the chains'
-- steps are joined (steps.chain_role, written by the store writer).
WITH @slice,
failed AS (
    SELECT corpus, coalesce(backbone, '(none)') AS backbone, run_id, scope, step_idx,
           coalesce(action, '(none)') AS action
    FROM sliced_steps
    WHERE chain_role IS NOT NULL
),
last_failed AS (
    SELECT run_id, scope, action, max(step_idx) AS last_idx
    FROM failed
    GROUP BY ALL
)
SELECT f.corpus,
       f.backbone,
       f.action AS src_action,
       l.action AS later_action,
       count(*) AS followed
FROM failed f
JOIN last_failed l
  ON l.run_id = f.run_id AND l.scope IS NOT DISTINCT FROM f.scope AND l.last_idx > f.step_idx
GROUP BY ALL
ORDER BY corpus, backbone, src_action, later_action
