-- Steps counted per slice cell, action and label source: (corpus, backbone, difficulty,
-- temperature, domain, outcome, action, label_source). A million rooms hold about 1,200 such
-- cells against 9.2 million steps, so any slice's per-action counts (grid_actions_cube.sql) and
-- the Propagation heatmap's rows (propagation_sources_cube.sql) add up a few rows. Kept on disk
-- per store version (queries/derived.py).
SELECT corpus, backbone, difficulty, temperature, domain, outcome, action, label_source,
       count(*) AS n_steps,
       count(label) AS labeled_steps,
       count(*) FILTER (WHERE label = 1) AS anomalies,
       count(*) FILTER (WHERE label = 0) AS successes
FROM steps
GROUP BY ALL
