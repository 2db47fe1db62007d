-- propagation_sources.sql answered from step_cube (steps counted per slice cell, action and
-- label source, kept on disk per store version): any slice takes whole cube rows.
WITH @slice
SELECT corpus, coalesce(backbone, '(none)') AS backbone, coalesce(action, '(none)') AS action, label_source,
       sum(n_steps)::BIGINT AS steps, sum(labeled_steps)::BIGINT AS labeled_steps,
       sum(anomalies)::BIGINT AS failed_steps
FROM sliced_step_cube
GROUP BY ALL
ORDER BY corpus, backbone, action, label_source
