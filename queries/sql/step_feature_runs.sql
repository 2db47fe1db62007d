-- Runs of the slice whose steps the detector engine scores, in run_id order: run_pos (0-based)
-- is the run's row in this result and the key step_features.sql returns for each step, so the
-- engine moves integers, not run ids, per step. The grouping keys (task_id, room_id,
-- difficulty) decide the room-disjoint splits; backbone the cross-backbone matrix.
WITH @slice
SELECT (row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos,
       run_id, corpus, backbone, task_id, room_id, difficulty, n_steps
FROM sliced_runs
ORDER BY run_id
