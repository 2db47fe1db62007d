-- The labeled steps of the slice by step number (_review_step_numbers.sql) and their labels.
WITH @slice,
@review_step_numbers
SELECT k.first_step + s.step_idx AS step_no, CAST(s.label AS TINYINT) AS label
FROM sliced_steps s
JOIN review_step_numbers k USING (run_id)
WHERE s.label IS NOT NULL
