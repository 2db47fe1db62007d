-- Every verdict ever given, oldest first (what `auditatlas reviews export` writes).
SELECT verdict_id, corpus, run_id, step_idx, verdict, failure_mode, note, reviewer, reviewed_at, queue, seed
FROM verdicts
ORDER BY reviewed_at, verdict_id
