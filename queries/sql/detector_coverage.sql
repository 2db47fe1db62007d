-- What the detector views rest on, per prediction set: its labeled, scored test steps (split
-- 'test', or 'all' for sets without a split) in the shared slice, and the runs they come from.
WITH @slice
SELECT t.set_id::VARCHAR AS set_id,
       count(*) AS n_steps,
       count(*) FILTER (WHERE t.label = 1) AS n_pos,
       count(DISTINCT t.run_id) AS n_runs
@scored_test_steps
GROUP BY ALL
ORDER BY set_id
