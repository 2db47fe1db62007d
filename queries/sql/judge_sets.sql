-- Every LLM judge's prediction set (method 'llm_judge': the released judges and those
-- `auditatlas judge` wrote) of the chosen corpora, newest first, with its provenance (params
-- JSON), from which the Re-score page reads each judge's calls, tokens, cost, latency and
-- abstentions (auditatlas/views/rescore_view.py).
SELECT set_id, corpus, origin, protocol, model, source_file AS store_source, created_at, params
FROM prediction_sets
WHERE method = 'llm_judge' AND list_contains($corpora, corpus)
ORDER BY created_at DESC NULLS LAST, set_id
