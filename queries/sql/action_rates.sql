-- Per (backbone, action): labeled steps, anomalies and the success rate (MAADBench Table 3 /
-- Figure 3). Unlabeled steps are excluded from the rate and counted apart.
WITH @slice
SELECT coalesce(r.backbone, '(none)') AS backbone,
       s.action,
       count(s.label) AS labeled_steps,
       count(*) FILTER (WHERE s.label = 1) AS anomalies,
       count(*) FILTER (WHERE s.label IS NULL) AS unlabeled_steps,
       count(*) FILTER (WHERE s.label = 0) / nullif(count(s.label), 0) AS success_rate
FROM steps s JOIN sliced_runs r USING (run_id)
GROUP BY ALL
ORDER BY backbone, s.action
