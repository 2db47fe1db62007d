-- The action and agent vocabularies of the slice's steps (one-hot columns of the step
-- features), sorted so the column order is the same on every call. The slice's steps by their
-- own slice columns (a step carries its run's), not by a join to the runs: at a million rooms
-- that join held 9 million run ids' hash probes for eleven actions.
WITH @slice
SELECT 'action' AS kind, s.action AS value, count(*) AS steps
FROM sliced_steps s
WHERE s.action IS NOT NULL
GROUP BY s.action
UNION ALL
SELECT 'agent' AS kind, s.agent AS value, count(*) AS steps
FROM sliced_steps s
WHERE s.agent IS NOT NULL
GROUP BY s.agent
ORDER BY kind, value
