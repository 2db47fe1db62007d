-- One prediction set's scores and ranks on the steps of one run.
SELECT step_idx, score, rank, pred_label
FROM predictions
WHERE run_id = $run AND set_id = $set AND step_idx IS NOT NULL
ORDER BY step_idx
