-- The doubt order's supervised half, the caller's table $supervised (run_id, step_idx,
-- self_confidence, label_issue), on the steps of the slice by step number
-- (_review_step_numbers.sql): numbers only, for auditatlas/analyses/review_queue.py to pick
-- the doubted steps from.
WITH @slice,
@review_step_numbers
SELECT k.first_step + CAST(h.step_idx AS BIGINT) AS step_no, CAST(h.self_confidence AS DOUBLE) AS self_confidence,
       CAST(h.label_issue AS BOOLEAN) AS label_issue
FROM @frame($supervised) h
JOIN review_step_numbers k ON k.run_id = CAST(h.run_id AS VARCHAR)
WHERE h.step_idx >= 0 AND h.step_idx < k.n_steps
