-- The prediction sets about one corpus, each with the detector it belongs to and the
-- provenance the views need. A detector is a method with its feature set (and, for judges,
-- protocol and model) across seeds: its sets are the seeds' replicates.
--
-- Provenance is read defensively from the params JSON (top level, or under "provenance"):
-- fit_seconds, score_seconds, peak_memory_mb are NULL where a set does not record them
-- (released sets) or its params are not valid JSON.
-- Counts per set come from set_counts (set_counts.sql, kept on disk per store version).
WITH counts AS (
    SELECT set_id, n_predictions, n_test_predictions, n_test_unscored
    FROM set_counts
    WHERE corpus = $corpus
),
sets AS (
    SELECT ps.*,
           concat_ws(' · ', ps.method, ps.feature_set, ps.protocol, ps.model) AS detector,
           coalesce(json_valid(ps.params), false) AS params_ok
    FROM prediction_sets ps
    WHERE ps.corpus = $corpus
)
SELECT set_id, corpus, detector, method, family, supervision, granularity, protocol, model, seed,
       feature_set, origin, source_file, created_at, slice,
       CASE WHEN params_ok THEN TRY_CAST(coalesce(json_extract_string(params, '$.fit_seconds'),
                                                  json_extract_string(params, '$.provenance.fit_seconds')) AS DOUBLE) END AS fit_seconds,
       CASE WHEN params_ok THEN TRY_CAST(coalesce(json_extract_string(params, '$.score_seconds'),
                                                  json_extract_string(params, '$.provenance.score_seconds')) AS DOUBLE) END AS score_seconds,
       CASE WHEN params_ok THEN TRY_CAST(coalesce(json_extract_string(params, '$.peak_memory_mb'),
                                                  json_extract_string(params, '$.provenance.peak_memory_mb')) AS DOUBLE) END AS peak_memory_mb,
       params_ok,
       coalesce(c.n_predictions, 0) AS n_predictions,
       coalesce(c.n_test_predictions, 0) AS n_test_predictions,
       coalesce(c.n_test_unscored, 0) AS n_test_unscored
FROM sets LEFT JOIN counts c USING (set_id)
ORDER BY detector, seed NULLS LAST, set_id
