-- The steps of a page of runs (judge_runs.sql) as an LLM judge reads them, in trace order.
SELECT run_id, step_idx, agent, action, text_in, text_out, is_tool
FROM steps
WHERE list_contains($runs, run_id)
ORDER BY run_id, step_idx
