-- The steps of a run before the reviewed one (at most $before of them), with the first
-- characters of their output: the run context a reviewer reads first.
SELECT step_idx, agent, action, label, left(coalesce(text_out, ''), $chars) AS text_out_start,
       length(coalesce(text_out, '')) AS text_out_chars
FROM steps
WHERE run_id = $run AND step_idx < $step AND step_idx >= $step - $before
ORDER BY step_idx
