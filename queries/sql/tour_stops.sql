-- The stops of the latest saved version of the tour named $name (auditatlas/tours.py), in order.
-- Latest = latest saved_at; versions saved in the same microsecond are ordered by version_id
-- (arbitrary, but the same on every read). A removed tour's latest version is one row without
-- a stop, so it reads as no rows: the tour is not held.
WITH latest AS (
    SELECT version_id
    FROM tours
    WHERE name = $name
    ORDER BY saved_at DESC, version_id DESC
    LIMIT 1
)
SELECT t.name, t.version_id, t.saved_at, t.author, t.stop_idx, t.link, t.sentence
FROM tours t
JOIN latest USING (version_id)
WHERE t.stop_idx IS NOT NULL
ORDER BY t.stop_idx
