-- Every LLM judge's verdict on one run (prediction sets of family 'llm': released judges, or a
-- judge set imported later; detectors have their own views): the released pick (`top`) and ranking when the set is a
-- released ranking, and the step the set ranks first (rank 1) in any case. A judge that
-- abstained has no top and an empty ranking; a judge with no row for this run has no verdict.
WITH judged AS (
    SELECT set_id, top, ranking
    FROM rankings
    WHERE run_key = $run_key OR run_key = $legacy_key
),
first AS (
    SELECT set_id, step_idx AS first_step, score AS first_score
    FROM predictions
    WHERE run_id = $run AND rank = 1
)
SELECT ps.set_id, ps.method, ps.protocol, ps.model, ps.origin,
       j.set_id IS NOT NULL AS released_ranking, j.top, j.ranking, len(j.ranking) AS ranking_length,
       f.first_step, f.first_score
FROM prediction_sets ps
LEFT JOIN judged j USING (set_id)
LEFT JOIN first f USING (set_id)
WHERE ps.corpus = $corpus AND ps.granularity = 'step' AND ps.family = 'llm'
ORDER BY ps.protocol NULLS LAST, ps.model NULLS LAST, ps.set_id
