-- Runs counted per slice cell: (corpus, backbone, difficulty, temperature, domain, outcome).
-- A million rooms hold about a hundred such cells, so the sidebar's choices with their run
-- counts (slice_options_cube.sql) add up a few rows. Kept on disk per store version
-- (queries/derived.py).
SELECT corpus, backbone, difficulty, temperature, domain, outcome, count(*) AS runs
FROM runs
GROUP BY ALL
