-- Every run of the store in run_id order, for the step vectors of the patterns
-- (auditatlas/patterns): run_pos (0-based) is the run's row here and the key pattern_steps.sql
-- returns per step; the slice columns let a query restrict the vectors to the sidebar's slice
-- without asking the store again; n_steps places the run's steps in the vectors' rows.
SELECT (row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos,
       run_id, corpus, backbone, difficulty, temperature, domain, outcome, n_steps
FROM runs
ORDER BY run_id
