-- The rows of the AUROC grid: per (backbone, action) of one corpus in the shared slice, the
-- labeled steps, anomalies and success rate (all labeled steps, any split), and the unlabeled
-- steps counted apart. $by_backbone pools the backbones into '(all backbones)'.
WITH @slice
SELECT CASE WHEN $by_backbone THEN coalesce(s.backbone, '(none)') ELSE '(all backbones)' END AS backbone,
       coalesce(s.action, '(none)') AS action,
       count(s.label) AS labeled_steps,
       count(*) FILTER (WHERE s.label = 1) AS anomalies,
       count(*) FILTER (WHERE s.label IS NULL) AS unlabeled_steps,
       count(*) FILTER (WHERE s.label = 0) / nullif(count(s.label), 0) AS success_rate
FROM sliced_steps s
WHERE s.corpus = $target_corpus
GROUP BY ALL
ORDER BY backbone, action
