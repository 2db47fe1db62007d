-- Every step of a store version as the search index takes it (auditatlas/search/fields.py):
-- its cell (one number for its run's slice values and its label; the build reads the distinct
-- cells with their values from this query too) and its index document as a JSON object whose
-- keys are the index's field names (tantivy's add_json: no Python object per field; tantivy
-- refuses a null, hence the coalesce). Read in batches by the index build (queries/search.py),
-- never by a page.
WITH labeled AS (
    SELECT *, CASE label WHEN 1 THEN 'anomaly' WHEN 0 THEN 'normal' ELSE 'unlabeled' END AS label_text
    FROM steps
),
celled AS (
    SELECT *, hash(corpus, backbone, difficulty, temperature, domain, outcome, label_text) AS cell
    FROM labeled
)
SELECT cell, corpus, backbone, difficulty, temperature, domain, outcome, label_text AS label,
       to_json({
           'run_id': run_id, 'step_idx': step_idx, 'cell': cell,
           'input': coalesce(text_in, ''), 'output': coalesce(text_out, ''),
           'agent': coalesce(agent, ''), 'action': coalesce(action, ''),
           'attributes': concat_ws(' ', failure_mode, error_code, extra)
       })::VARCHAR AS doc
FROM celled
