-- Silent vs loud anomalies per backbone (MAADBench Table 4): an anomaly is silent when its
-- scope (puzzle, or the run for corpora without puzzles) still succeeded. Formatting errors
-- are counted apart from action failures.
WITH @slice
SELECT coalesce(s.backbone, '(none)') AS backbone,
       count(*) FILTER (WHERE s.label = 1 AND NOT coalesce(s.is_format_error, false)) AS action_failures,
       count(*) FILTER (WHERE s.label = 1 AND NOT coalesce(s.is_format_error, false) AND s.scope_success) AS silent_action_failures,
       count(*) FILTER (WHERE s.label = 1 AND coalesce(s.is_format_error, false)) AS format_errors,
       count(*) FILTER (WHERE s.label = 1 AND coalesce(s.is_format_error, false) AND s.scope_success) AS silent_format_errors,
       count(*) FILTER (WHERE s.label = 1 AND s.scope_success IS NULL) AS anomalies_without_scope_outcome
FROM sliced_steps s
GROUP BY ALL
ORDER BY backbone
