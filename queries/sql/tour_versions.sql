-- Every saved version of the tour named $name, newest first (a removal has 0 stops).
SELECT version_id, saved_at, max(author) AS author, count(stop_idx) AS stops
FROM tours
WHERE name = $name
GROUP BY version_id, saved_at
ORDER BY saved_at DESC, version_id DESC
