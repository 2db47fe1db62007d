-- Silent vs loud anomalies per backbone (MAADBench Table 4): an anomaly is silent when its
-- scope (puzzle, or the run for corpora without puzzles) still succeeded. Formatting errors
-- are counted apart from action failures.
-- Only anomalous steps are read (label = 1 is pushed into the scan, about half the time of
-- counting with a filter over every step at a million rooms); every backbone of the slice's
-- runs still gets its row, with zeros where it has no anomaly.
WITH @slice,
anomalies AS (
    SELECT coalesce(s.backbone, '(none)') AS backbone,
           count(*) FILTER (WHERE NOT coalesce(s.is_format_error, false)) AS action_failures,
           count(*) FILTER (WHERE NOT coalesce(s.is_format_error, false) AND s.scope_success) AS silent_action_failures,
           count(*) FILTER (WHERE coalesce(s.is_format_error, false)) AS format_errors,
           count(*) FILTER (WHERE coalesce(s.is_format_error, false) AND s.scope_success) AS silent_format_errors,
           count(*) FILTER (WHERE s.scope_success IS NULL) AS anomalies_without_scope_outcome
    FROM sliced_steps s
    WHERE s.label = 1
    GROUP BY ALL
),
backbones AS (
    SELECT DISTINCT coalesce(backbone, '(none)') AS backbone FROM sliced_runs
)
SELECT backbone,
       coalesce(a.action_failures, 0) AS action_failures,
       coalesce(a.silent_action_failures, 0) AS silent_action_failures,
       coalesce(a.format_errors, 0) AS format_errors,
       coalesce(a.silent_format_errors, 0) AS silent_format_errors,
       coalesce(a.anomalies_without_scope_outcome, 0) AS anomalies_without_scope_outcome
FROM backbones b
FULL JOIN anomalies a USING (backbone)
ORDER BY backbone
