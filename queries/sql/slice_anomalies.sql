-- The anomalous steps of the slice under its label choice, in the store's order: what the
-- failure clusters group when the view's labels are not the released ones the step vectors hold.
WITH @slice
SELECT run_id, step_idx
FROM sliced_steps
WHERE label = 1
ORDER BY run_id, step_idx
