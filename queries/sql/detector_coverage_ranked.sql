-- detector_coverage.sql answered from test_sets (queries/derived.py), counted per (set,
-- corpus, backbone) once per store version: the query layer picks this text when the slice
-- filters at most the corpus and the backbone, whose groups test_sets keeps apart. Runs add up
-- over backbones because a run has one backbone.
WITH @slice,
chosen AS (
    SELECT t.* FROM sliced_test_sets t
    WHERE list_contains($set_ids, t.set_id::VARCHAR)
)
SELECT set_id::VARCHAR AS set_id,
       sum(n_steps)::BIGINT AS n_steps,
       sum(n_pos)::BIGINT AS n_pos,
       sum(n_runs)::BIGINT AS n_runs
FROM chosen
GROUP BY ALL
ORDER BY set_id
