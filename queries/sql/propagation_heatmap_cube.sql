-- propagation_heatmap.sql answered from propagation_cube (its counts per slice cell, kept on
-- disk per store version): any slice takes whole cube rows, and they add up to its counts.
WITH @slice
SELECT corpus, coalesce(backbone, '(none)') AS backbone, src_action, later_action,
       sum(followed)::BIGINT AS followed
FROM sliced_propagation_cube
GROUP BY ALL
ORDER BY corpus, backbone, src_action, later_action
