-- rescore_sets.sql answered from the ranks stored with test_scores (queries/derived.py): the
-- same rows without joining every test prediction to its step and sorting them (at a million
-- rooms with three sets that held 2.4 GB). set_mid2 is 2 x a test step's mid-rank of score
-- within its set, over the set's scored labeled test steps: the ranks the query's tie blocks
-- give. test_scores holds split 'test' and 'all'; a re-scored set's steps are 'train' or 'test'.
WITH @rescore_sets_chosen,
auc AS (
    SELECT t.set_id::VARCHAR AS set_id,
           count(*) FILTER (WHERE t.label = 1)::BIGINT AS n_pos,
           count(*) FILTER (WHERE t.label = 0)::BIGINT AS n_neg,
           sum(t.set_mid2) FILTER (WHERE t.label = 1) / 2.0 AS rank_sum_pos
    FROM test_scores t
    WHERE t.set_id::VARCHAR IN (SELECT set_id FROM sets)
    GROUP BY 1
),
@rescore_sets_listed
