-- Every step of a store version as the search index holds it (auditatlas/search/fields.py,
-- STEP_COLUMNS): read in batches by the index build (queries/search.py), never by a page.
SELECT run_id, step_idx, corpus, backbone, difficulty, temperature, domain, outcome,
       text_in, text_out, agent, action, label, failure_mode, error_code, extra
FROM steps
