-- The listing of rescore_sets.sql and its twin: the chosen sets (`sets`) with their provenance,
-- their predictions' counts and their test ROC-AUC from `auc` (n_pos, n_neg, rank_sum_pos: the
-- anomalies' rank sum, tied scores sharing their average rank), newest first.
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
