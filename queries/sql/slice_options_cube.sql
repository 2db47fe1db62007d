-- slice_options.sql answered from run_cube (runs counted per slice cell, kept on disk per store
-- version): the same choices and run counts, adding up a few rows instead of reading every run.
WITH r AS MATERIALIZED (SELECT * FROM run_cube)
SELECT 'corpus' AS column_name, corpus AS value, sum(runs)::BIGINT AS runs FROM r GROUP BY ALL
UNION ALL SELECT 'backbone', backbone, sum(runs)::BIGINT FROM r WHERE backbone IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'difficulty', difficulty, sum(runs)::BIGINT FROM r WHERE difficulty IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'temperature', CAST(temperature AS VARCHAR), sum(runs)::BIGINT FROM r WHERE temperature IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'domain', domain, sum(runs)::BIGINT FROM r WHERE domain IS NOT NULL GROUP BY ALL
UNION ALL SELECT 'outcome', outcome, sum(runs)::BIGINT FROM r GROUP BY ALL
ORDER BY column_name, value
