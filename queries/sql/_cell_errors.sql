-- The listing part of grid_errors.sql and grid_errors_ranked.sql: given a CTE ``cell`` of the
-- cell's steps with ``flag`` (the set's decision) and ``cut``, its highest-scored false
-- positives and lowest-scored false negatives (ties by run, then step), each with its position
-- and the count of its kind in the cell, at most $limit of each.
errors AS (
    SELECT 'false positive' AS kind, *,
           row_number() OVER (ORDER BY score DESC, run_id, step_idx) AS position,
           count(*) OVER () AS n_in_cell
    FROM cell WHERE label = 0 AND flag
    UNION ALL
    SELECT 'false negative' AS kind, *,
           row_number() OVER (ORDER BY score ASC, run_id, step_idx) AS position,
           count(*) OVER () AS n_in_cell
    FROM cell WHERE label = 1 AND NOT flag
)
-- The step's id and agent are read apart, for the listed rows only (error_steps.sql).
SELECT e.kind, e.position, e.n_in_cell, e.set_id, e.run_id, e.step_idx, e.backbone, e.action,
       e.label, e.scope_success, e.score, e.pred_label, e.own_labels, e.cut
FROM errors e
WHERE e.position <= $limit
ORDER BY e.kind DESC, e.position
