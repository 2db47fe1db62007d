-- Which (source action, later action) pairs can occur at all, derived from the whole store
-- (not a typed-in pipeline table): a pair is possible when some scope holds a step of the
-- later action after a step of the source action, whatever their labels, i.e. when the
-- scope's first step of the source action comes before its last step of the later action.
-- Each scope is first reduced to one row per action (its first and last step), then paired
-- within the scope. Reducing scopes to their distinct action sequences first was faster (4.8
-- against 8.7 s at 100,000 rooms) but gathered every scope's sequence as a list, which DuckDB
-- cannot spill: at a million rooms it ran out of the derived build's 512 MB, where this join
-- spills and finishes.
WITH spans AS (
    SELECT run_id, scope, coalesce(action, '(none)') AS action, min(step_idx) AS first_i, max(step_idx) AS last_i
    FROM steps
    GROUP BY run_id, scope, coalesce(action, '(none)')
)
SELECT DISTINCT f.action AS src_action, l.action AS later_action
FROM spans f
JOIN spans l ON l.run_id = f.run_id AND l.scope IS NOT DISTINCT FROM f.scope AND l.last_i > f.first_i
ORDER BY src_action, later_action
