-- Integer counts per corpus for `auditatlas info` and the Overview.
WITH names AS (
    SELECT corpus FROM corpora UNION SELECT corpus FROM runs
    UNION SELECT corpus FROM prediction_sets UNION SELECT corpus FROM configs
),
r AS (SELECT corpus, count(*) AS runs FROM runs GROUP BY corpus),
s AS (SELECT corpus, count(*) AS steps, count(label) AS labeled_steps,
             count(*) FILTER (WHERE label = 1) AS anomalous_steps
      FROM steps GROUP BY corpus),
e AS (SELECT corpus, count(*) AS edges FROM edges GROUP BY corpus),
ps AS (SELECT corpus, count(*) AS prediction_sets FROM prediction_sets GROUP BY corpus),
p AS (SELECT corpus, count(*) AS predictions FROM predictions GROUP BY corpus),
c AS (SELECT corpus, count(*) AS configs FROM configs GROUP BY corpus),
k AS (SELECT corpus, count(*) AS capabilities, count(*) FILTER (WHERE excess) AS excess_capabilities
      FROM capabilities GROUP BY corpus)
SELECT n.corpus,
       coalesce(r.runs, 0) AS runs,
       coalesce(s.steps, 0) AS steps,
       coalesce(s.labeled_steps, 0) AS labeled_steps,
       coalesce(s.anomalous_steps, 0) AS anomalous_steps,
       coalesce(e.edges, 0) AS edges,
       coalesce(ps.prediction_sets, 0) AS prediction_sets,
       coalesce(p.predictions, 0) AS predictions,
       coalesce(c.configs, 0) AS configs,
       coalesce(k.capabilities, 0) AS capabilities,
       coalesce(k.excess_capabilities, 0) AS excess_capabilities
FROM names n
LEFT JOIN r USING (corpus) LEFT JOIN s USING (corpus) LEFT JOIN e USING (corpus)
LEFT JOIN ps USING (corpus) LEFT JOIN p USING (corpus) LEFT JOIN c USING (corpus)
LEFT JOIN k USING (corpus)
WHERE n.corpus IS NOT NULL
ORDER BY n.corpus
