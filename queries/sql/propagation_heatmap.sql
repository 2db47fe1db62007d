-- Numerators of the propagation heatmap (MAADBench Figure 4; shared/specs/analyses.md): per
-- corpus, backbone, failed source action and later failed action, the failed source steps
-- followed later in their scope by a failed step of the later action
-- (_propagation_followed.sql says how). Cells absent here are 0. Per corpus too: a corpus
-- appears here exactly when it forms a chain in the slice.
WITH @slice,
@propagation_followed
SELECT corpus,
       coalesce(backbone, '(none)') AS backbone,
       src_action,
       later_action,
       sum(followed)::BIGINT AS followed
FROM followed
GROUP BY ALL
ORDER BY corpus, backbone, src_action, later_action
