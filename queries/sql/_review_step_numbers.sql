-- Every step of the slice numbered 0..N-1, runs in run id order and each run's steps in order:
-- run `run_no` holds step numbers first_step .. first_step + n_steps - 1 (the store holds every
-- run's steps dense, 0..n_steps-1: auditatlas/validate.py). The review flags
-- (auditatlas/analyses/review_flags.py) count per step number in arrays, a set at a time.
review_step_numbers AS (
    SELECT run_id, corpus, n_steps,
           CAST(row_number() OVER (ORDER BY run_id) - 1 AS BIGINT) AS run_no,
           CAST(sum(n_steps) OVER (ORDER BY run_id ROWS UNBOUNDED PRECEDING) - n_steps AS BIGINT) AS first_step
    FROM sliced_runs
)
