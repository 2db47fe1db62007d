-- The Propagation heatmap's numerators per slice cell, over ``sliced_steps`` (for
-- propagation_heatmap.sql, and for the derived table propagation_cube.sql over every step).
-- Within one scope (same run and puzzle; the run for corpora without puzzles), a failed
-- source step s counts for later action a when some step of action a after s in the same
-- scope also failed. A scope's last failed step of action a decides that for every s, so s is
-- joined to one row per (scope, a): each (s, a) counts at most once. A failed step followed by
-- another in its scope is a step of a chain, so only the chains' steps are joined
-- (steps.chain_role, written by the store writer). The slice columns are a run's, and a scope
-- lies within one run, so the counts add up over slice cells. No trailing comma.
failed AS (
    SELECT corpus, backbone, difficulty, temperature, domain, outcome, run_id, scope, step_idx,
           coalesce(action, '(none)') AS action
    FROM sliced_steps
    WHERE chain_role IS NOT NULL
),
last_failed AS (
    SELECT run_id, scope, action, max(step_idx) AS last_idx
    FROM failed
    GROUP BY ALL
),
followed AS (
    SELECT f.corpus, f.backbone, f.difficulty, f.temperature, f.domain, f.outcome,
           f.action AS src_action, l.action AS later_action, count(*) AS followed
    FROM failed f
    JOIN last_failed l
      ON l.run_id = f.run_id AND l.scope IS NOT DISTINCT FROM f.scope AND l.last_idx > f.step_idx
    GROUP BY ALL
)
