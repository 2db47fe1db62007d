-- Steps of the slice per corpus, backbone, action and label source: how many, how many
-- labeled, how many failed. They are the rows of the propagation heatmap (MAADBench Figure 4;
-- a row's failed steps are the denominator of its cells, "-" where none failed) and, summed per
-- corpus, the step counts of propagation_corpora.
WITH @slice
SELECT corpus,
       coalesce(backbone, '(none)') AS backbone,
       coalesce(action, '(none)') AS action,
       label_source,
       count(*) AS steps,
       count(label) AS labeled_steps,
       count(*) FILTER (WHERE label = 1) AS failed_steps
FROM sliced_steps
GROUP BY ALL
ORDER BY corpus, backbone, action, label_source
