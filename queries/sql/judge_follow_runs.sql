-- The runs of the slice a following judge may judge (auditatlas/judges/follow.py): every run
-- with steps, with its step count (a received trace that grows is a run whose count changes).
WITH @slice
SELECT r.run_id, r.corpus, r.n_steps
FROM sliced_runs r
WHERE r.n_steps > 0
ORDER BY r.run_id
