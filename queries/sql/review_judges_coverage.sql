-- Why the judges-against-the-human order may be empty: runs with a human decisive step (label
-- source $decisive_source) in the store and in the slice, and the LLM judges' step-level sets
-- on their corpora.
WITH @slice,
decisive_corpora AS (
    SELECT DISTINCT corpus FROM steps WHERE label_source = $decisive_source AND label = 1
)
SELECT (SELECT count(DISTINCT run_id) FROM steps WHERE label_source = $decisive_source AND label = 1) AS store_runs,
       (SELECT count(DISTINCT run_id) FROM sliced_steps WHERE label_source = $decisive_source AND label = 1) AS slice_runs,
       (SELECT count(*) FROM prediction_sets
        WHERE granularity = 'step' AND family = 'llm' AND corpus IN (SELECT corpus FROM decisive_corpora)) AS judge_sets
