-- The verdicts given on one step, newest first (the review page's history of the step).
SELECT verdict, failure_mode, note, reviewer, reviewed_at, queue
FROM verdicts
WHERE run_id = $run AND step_idx = $step
ORDER BY reviewed_at DESC, verdict_id DESC
