-- The items of POST localization on one corpus: failed runs with a known truth step.
-- Truth = the run's labeled decisive step (Who&When's human decisive step, the only anomaly it
-- labels; a labels file's or a span annotation's ``decisive``; the first of several), otherwise
-- the origin of the failing chain: the first anomalous step of a scope that failed
-- (MAADBench: the puzzle the room stopped at), else the run's first anomalous step.
WITH @slice,
failed AS (
    SELECT r.run_id, r.source_file, r.n_steps
    FROM sliced_runs r
    WHERE r.corpus = $target_corpus AND r.outcome = 'failure' AND r.n_steps > 0
),
anomalies AS (
    SELECT s.run_id, s.step_idx, coalesce(s.scope_success, false) AS scope_ok, @decisive AS decisive
    FROM steps s JOIN failed f USING (run_id)
    WHERE s.label = 1
)
SELECT f.run_id, f.source_file, f.n_steps,
       coalesce(min(a.step_idx) FILTER (WHERE a.decisive), min(a.step_idx) FILTER (WHERE NOT a.scope_ok),
                min(a.step_idx)) AS truth_idx
FROM failed f JOIN anomalies a USING (run_id)
GROUP BY f.run_id, f.source_file, f.n_steps
ORDER BY f.source_file, f.run_id
