-- One run-level score per (prediction set, run) of the detection population, so released or
-- re-scored step-level prediction sets enter the POST detection and LIVE boards beside the
-- feature-based entrants: a run scores the highest score of its steps inside the prefix
-- (a run is as suspicious as its most suspicious step). Run-level sets pass through as they
-- are, only when $include_run_level (a run score is computed on the whole run: a POST
-- artifact). Training rows are left out: a score on a run the detector was fitted on is not
-- a detection. Same population and prefix as run_prefix_features.sql (keep in step).
WITH @slice,
population AS (
    SELECT r.run_id,
           least(r.n_steps, greatest(1, ceil(round($fraction * r.n_steps, 6))))::BIGINT AS k
    FROM sliced_runs r
    WHERE @known_outcome AND r.n_steps >= greatest($min_steps, 1)
)
SELECT p.set_id, p.run_id, max(p.score) AS score,
       CASE WHEN bool_or(p.step_idx IS NULL) THEN 'run' ELSE 'step' END AS granularity,
       count(*) AS n_scored
FROM predictions p JOIN population q USING (run_id)
WHERE p.score IS NOT NULL AND NOT isnan(p.score)
  AND coalesce(p.split, 'all') <> 'train'
  AND ((p.step_idx IS NOT NULL AND p.step_idx < q.k) OR (p.step_idx IS NULL AND $include_run_level))
GROUP BY p.set_id, p.run_id
ORDER BY p.set_id, p.run_id
