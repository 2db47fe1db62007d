-- How many runs of the slice an LLM judge reads (judge_runs.sql), per corpus.
WITH @slice
SELECT r.corpus, count(*) AS runs, sum(r.n_steps) AS steps
FROM sliced_runs r
WHERE r.n_steps > 0
GROUP BY r.corpus
ORDER BY r.corpus
