-- Rank of each item's truth step under every step-level prediction set of the corpus
-- (1 = ranked first; ties go to the earlier step, see view_predictions.sql).
-- $items is the list of run ids, $truths the truth step of each, in the same order.
WITH items AS (
    SELECT unnest($items) AS run_id, unnest($truths) AS truth_idx
)
SELECT ps.set_id, p.run_id, p.rank, p.score
FROM prediction_sets ps
JOIN predictions p USING (set_id)
JOIN items i ON p.run_id = i.run_id AND p.step_idx = i.truth_idx
WHERE ps.corpus = $corpus AND ps.granularity = 'step'
  -- A score on a run the detector was fitted on is not a localization (as in run_prefix_predictions).
  AND coalesce(p.split, 'all') <> 'train'
ORDER BY ps.set_id, p.run_id
