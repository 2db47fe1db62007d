-- The action and agent vocabularies of the slice's steps (one-hot columns of the step
-- features), sorted so the column order is the same on every call.
WITH @slice
SELECT 'action' AS kind, s.action AS value, count(*) AS steps
FROM steps s SEMI JOIN sliced_runs r ON s.run_id = r.run_id
WHERE s.action IS NOT NULL
GROUP BY s.action
UNION ALL
SELECT 'agent' AS kind, s.agent AS value, count(*) AS steps
FROM steps s SEMI JOIN sliced_runs r ON s.run_id = r.run_id
WHERE s.agent IS NOT NULL
GROUP BY s.agent
ORDER BY kind, value
