-- grid_errors.sql answered from the ranks stored with test_scores and the counts of test_sets
-- (queries/derived.py): the same rows without sorting the set's steps. The query layer picks
-- this text only when the slice takes the set's test steps whole (no filter, or a corpus
-- filter when each set is of one corpus): the threshold is over all of them, and set_high
-- (the set's steps scoring at most this score) is then the high rank the window of
-- grid_errors.sql computes. Only the cell's errors are sorted, to list them.
WITH @slice,
counts AS (
    SELECT sum(t.n_steps)::BIGINT AS n, sum(t.n_decided)::BIGINT AS n_decided
    FROM sliced_test_sets t
    WHERE t.set_id = $set_id
),
scored AS (
    SELECT t.set_id::VARCHAR AS set_id, t.run_id::VARCHAR AS run_id, t.step_idx,
           coalesce(t.backbone::VARCHAR, '(none)') AS backbone, coalesce(t.action::VARCHAR, '(none)') AS action,
           t.label, t.scope_success, t.score, t.pred_label, t.set_high
    FROM sliced_test_scores t
    WHERE t.set_id = $set_id
),
decided AS (
    SELECT s.*,
           ($threshold = 'own' AND c.n_decided = c.n) AS own_labels,
           CASE WHEN $threshold = 'own' AND c.n_decided = c.n THEN coalesce(s.pred_label = 1, false)
                ELSE c.n - s.set_high < greatest(ceil($top_k / 100.0 * c.n), 1) END AS flag
    FROM scored s CROSS JOIN counts c
),
lowest AS (
    SELECT min(score) FILTER (WHERE flag) AS lowest_flagged_score FROM decided
),
with_cut AS (
    SELECT d.*, CASE WHEN d.own_labels THEN NULL ELSE l.lowest_flagged_score END AS cut
    FROM decided d CROSS JOIN lowest l
),
cell AS (
    SELECT * FROM with_cut
    WHERE ($cell_backbone = '(all backbones)' OR backbone = $cell_backbone)
      AND ($cell_action = '(all actions)' OR action = $cell_action)
),
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
