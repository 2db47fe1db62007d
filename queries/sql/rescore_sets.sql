-- Re-scored prediction sets (source 'rescore') of the chosen corpora ($corpora: empty = all),
-- newest first, with their provenance (params JSON) and their ROC-AUC over labeled test steps:
-- the Mann-Whitney rank sum, tied scores sharing their average rank (ties count one half),
-- computed over tie blocks. test_roc_auc is NULL when the test steps hold a single class
-- (undefined, never 0.5).
WITH sets AS (
    SELECT * FROM prediction_sets
    WHERE origin = 'rescore' AND (len($corpora) = 0 OR list_contains($corpora, corpus))
),
scored AS (
    SELECT p.set_id, s.label, p.score
    FROM predictions_stored p
    JOIN sets USING (set_id)
    JOIN steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
    WHERE p.step_idx IS NOT NULL AND p.split = 'test' AND s.label IS NOT NULL
      AND p.score IS NOT NULL AND NOT isnan(p.score)
),
blocks AS (
    SELECT set_id, score, count(*) FILTER (WHERE label = 1) AS pos, count(*) AS n
    FROM scored GROUP BY set_id, score
),
ranked AS (
    SELECT *, coalesce(sum(n) OVER (PARTITION BY set_id ORDER BY score
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS below
    FROM blocks
),
auc AS (
    SELECT set_id, sum(pos)::BIGINT AS n_pos, sum(n - pos)::BIGINT AS n_neg,
           sum(pos * (below + (n + 1) / 2.0)) AS rank_sum_pos
    FROM ranked GROUP BY set_id
),
counts AS (
    SELECT set_id, count(*) FILTER (WHERE step_idx IS NOT NULL) AS step_rows,
           count(*) FILTER (WHERE step_idx IS NULL) AS run_rows
    FROM predictions_stored JOIN sets USING (set_id)
    GROUP BY set_id
)
SELECT sets.set_id, sets.corpus, sets.method, sets.family, sets.supervision, sets.seed, sets.feature_set,
       sets.source_file AS store_source, sets.created_at, sets.slice, sets.params,
       CASE WHEN json_valid(sets.params) THEN TRY_CAST(json_extract_string(sets.params, '$.fit_seconds') AS DOUBLE) END AS fit_seconds,
       CASE WHEN json_valid(sets.params) THEN TRY_CAST(json_extract_string(sets.params, '$.score_seconds') AS DOUBLE) END AS score_seconds,
       CASE WHEN json_valid(sets.params) THEN TRY_CAST(json_extract_string(sets.params, '$.peak_memory_mb') AS DOUBLE) END AS peak_memory_mb,
       coalesce(c.step_rows, 0) AS step_rows, coalesce(c.run_rows, 0) AS run_rows,
       coalesce(a.n_pos, 0) AS test_anomalies, coalesce(a.n_neg, 0) AS test_normals,
       CASE WHEN a.n_pos > 0 AND a.n_neg > 0
            THEN (a.rank_sum_pos - a.n_pos * (a.n_pos + 1) / 2.0) / (a.n_pos * a.n_neg) END AS test_roc_auc
FROM sets
LEFT JOIN auc a USING (set_id)
LEFT JOIN counts c USING (set_id)
ORDER BY sets.created_at DESC, sets.set_id
