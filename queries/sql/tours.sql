-- Every tour the store holds, by name: its latest version (auditatlas/tours.py), how many stops
-- it has, when and by whom it was saved, and how many versions were saved (history is kept).
-- A removed tour (latest version without a stop) is not listed.
WITH versions AS (
    SELECT name, version_id, max(saved_at) AS saved_at, max(author) AS author, count(stop_idx) AS stops
    FROM tours
    GROUP BY name, version_id
), ranked AS (
    SELECT *,
           row_number() OVER (PARTITION BY name ORDER BY saved_at DESC, version_id DESC) AS newest,
           count(*) OVER (PARTITION BY name) AS versions
    FROM versions
)
SELECT name, stops, saved_at, author, versions, version_id
FROM ranked
WHERE newest = 1 AND stops > 0
ORDER BY name
