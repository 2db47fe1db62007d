-- Distinct values of every slice column (the sidebar's choices), with run counts.
SELECT 'corpus' AS column_name, corpus AS value, count(*) AS runs FROM runs GROUP BY ALL
UNION ALL SELECT 'backbone', backbone, count(*) FROM runs WHERE backbone IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'difficulty', difficulty, count(*) FROM runs WHERE difficulty IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'temperature', CAST(temperature AS VARCHAR), count(*) FROM runs WHERE temperature IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'domain', domain, count(*) FROM runs WHERE domain IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'outcome', outcome, count(*) FROM runs GROUP BY ALL
ORDER BY column_name, value
