-- The steps of one run in trace order, without their (possibly long) texts: the graph and the
-- step table need only these columns; the chosen step's text comes from explorer_step.
-- ``decisive``: a labeled decisive step (_decisive.sql), drawn as a star.
SELECT step_idx, step_id, agent, action, scope, scope_success, label, label_source, error_code,
       failure_mode, is_cascade, is_tool, is_format_error, tokens_in, tokens_out, duration_s, confidence,
       chain_role, chain_length, @decisive AS decisive
FROM steps s
WHERE run_id = $run
ORDER BY step_idx
