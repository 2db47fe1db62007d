-- grid_actions.sql answered from step_cube (steps counted per slice cell and action, kept on
-- disk per store version): every slice column is a column of the cube, so any slice takes
-- whole cube rows, and the counts add up to what grid_actions.sql counts over the steps.
WITH @slice
SELECT CASE WHEN $by_backbone THEN coalesce(c.backbone, '(none)') ELSE '(all backbones)' END AS backbone,
       coalesce(c.action, '(none)') AS action,
       sum(c.labeled_steps)::BIGINT AS labeled_steps,
       sum(c.anomalies)::BIGINT AS anomalies,
       sum(c.n_steps - c.labeled_steps)::BIGINT AS unlabeled_steps,
       sum(c.successes) / nullif(sum(c.labeled_steps), 0) AS success_rate
FROM sliced_step_cube c
WHERE c.corpus = $target_corpus
GROUP BY ALL
ORDER BY backbone, action
