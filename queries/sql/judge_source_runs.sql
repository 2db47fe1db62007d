-- The runs a judge's sets already hold (auditatlas/judges/follow.py): those with predictions,
-- and each set's params, whose abstained_runs are the runs judged without a prediction.
WITH sets AS (SELECT set_id, params FROM prediction_sets WHERE source_file = $source)
SELECT sets.set_id, sets.params, p.run_id
FROM sets
LEFT JOIN (SELECT DISTINCT set_id, run_id FROM predictions_stored
           WHERE set_id IN (SELECT set_id FROM sets)) p USING (set_id)
ORDER BY sets.set_id, p.run_id
