-- The runs of the slice an LLM judge reads (auditatlas/judges), a page at a time in run order:
-- the runs after $after, at most $page of them, so a judge over a million runs holds one page.
-- ``question`` and ``ground_truth`` come from the run's extra where the corpus keeps them
-- (Who&When); a run whose extra is not JSON reads as having neither.
WITH @slice
SELECT r.run_id, r.corpus, r.task_id, r.n_steps, r.outcome,
       try(json_extract_string(r.extra, '$.question')) AS question,
       try(json_extract_string(r.extra, '$.ground_truth')) AS ground_truth
FROM sliced_runs r
WHERE r.n_steps > 0 AND r.run_id > $after
ORDER BY r.run_id
LIMIT $page
