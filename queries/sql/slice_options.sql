-- Distinct values of every slice column (the sidebar's choices), with run counts.
-- The runs table is read once (a materialised CTE) rather than once per column.
WITH r AS MATERIALIZED (SELECT corpus, backbone, difficulty, temperature, domain, outcome FROM runs)
SELECT 'corpus' AS column_name, corpus AS value, count(*) AS runs FROM r GROUP BY ALL
UNION ALL SELECT 'backbone', backbone, count(*) FROM r WHERE backbone IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'difficulty', difficulty, count(*) FROM r WHERE difficulty IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'temperature', CAST(temperature AS VARCHAR), count(*) FROM r WHERE temperature IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'domain', domain, count(*) FROM r WHERE domain IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'outcome', outcome, count(*) FROM r GROUP BY ALL
ORDER BY column_name, value
