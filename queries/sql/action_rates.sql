-- Per (backbone, action): labeled steps, anomalies and the success rate (MAADBench Table 3 /
-- Figure 3). Unlabeled steps are excluded from the rate and counted apart.
WITH @slice
SELECT coalesce(s.backbone, '(none)') AS backbone,
       s.action,
       count(s.label) AS labeled_steps,
       count(*) FILTER (WHERE s.label = 1) AS anomalies,
       count(*) FILTER (WHERE s.label IS NULL) AS unlabeled_steps,
       count(*) FILTER (WHERE s.label = 0) / nullif(count(s.label), 0) AS success_rate
FROM sliced_steps s
GROUP BY ALL
ORDER BY backbone, s.action
