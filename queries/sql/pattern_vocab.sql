-- The action and agent vocabularies of every step of the store (the codes of pattern_steps.sql),
-- sorted so the codes are the same on every build of one store version.
SELECT 'action' AS kind, action AS value, count(*) AS steps FROM steps WHERE action IS NOT NULL GROUP BY action
UNION ALL
SELECT 'agent' AS kind, agent AS value, count(*) AS steps FROM steps WHERE agent IS NOT NULL GROUP BY agent
ORDER BY kind, value
