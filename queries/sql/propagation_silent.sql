-- Silent vs loud anomalies per backbone and action (MAADBench Table 4, Figure 7 right): an
-- anomaly is silent when its scope (puzzle, or the run for corpora without puzzles) still
-- succeeded, loud when it failed. Formatting errors are counted apart from action failures;
-- anomalies whose scope outcome is unknown are counted apart too.
WITH @slice
SELECT coalesce(backbone, '(none)') AS backbone,
       coalesce(action, '(none)') AS action,
       count(*) FILTER (WHERE NOT coalesce(is_format_error, false)) AS action_failures,
       count(*) FILTER (WHERE NOT coalesce(is_format_error, false) AND scope_success) AS silent_action_failures,
       count(*) FILTER (WHERE NOT coalesce(is_format_error, false) AND NOT scope_success) AS loud_action_failures,
       count(*) FILTER (WHERE coalesce(is_format_error, false)) AS format_errors,
       count(*) FILTER (WHERE coalesce(is_format_error, false) AND scope_success) AS silent_format_errors,
       count(*) FILTER (WHERE coalesce(is_format_error, false) AND NOT scope_success) AS loud_format_errors,
       count(*) FILTER (WHERE scope_success IS NULL) AS anomalies_without_scope_outcome
FROM sliced_steps
WHERE label = 1
GROUP BY ALL
ORDER BY backbone, action
