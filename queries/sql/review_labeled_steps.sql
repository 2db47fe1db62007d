-- The labeled steps of the slice in (run, step) order: what the random review order samples.
WITH @slice
SELECT corpus, run_id, step_idx, label
FROM sliced_steps
WHERE label IS NOT NULL
ORDER BY run_id, step_idx
