-- The actions present in the slice (the search's action filter), with their step counts.
WITH @slice
SELECT action, count(*) AS steps
FROM sliced_steps
WHERE action IS NOT NULL
GROUP BY action
ORDER BY action
