-- One step of one run, whole (texts included).
SELECT *
FROM steps
WHERE run_id = $run AND step_idx = $step
