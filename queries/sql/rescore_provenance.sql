-- Every re-scored prediction set (source 'rescore') with its corpus and provenance JSON: what
-- a re-ingest checks to say which sets it invalidates (params.data_sources names the store
-- sources the set's features were read from).
SELECT set_id, corpus, method, seed, feature_set, source_file AS store_source, created_at, params
FROM prediction_sets
WHERE origin = 'rescore'
ORDER BY set_id
