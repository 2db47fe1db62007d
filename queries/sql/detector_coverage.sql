-- What the detector views rest on, per prediction set: its labeled, scored test steps (split
-- 'test', or 'all' for sets without a split) in the shared slice, and the runs they come from.
WITH @slice
SELECT p.set_id,
       count(*) AS n_steps,
       count(*) FILTER (WHERE s.label = 1) AS n_pos,
       count(DISTINCT p.run_id) AS n_runs
@scored_test_steps
GROUP BY p.set_id
ORDER BY p.set_id
