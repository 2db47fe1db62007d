-- The errors behind one cell of the AUROC grid, for one prediction set: its highest-scored
-- false positives and lowest-scored false negatives among the labeled test steps of that
-- backbone and action ('(all backbones)' / '(all actions)' pool them) in the shared slice.
--
-- The threshold is the set's, over all its labeled, scored test steps in the slice (not only
-- this cell's), exactly as in detector_overall.sql: its own pred_label when $threshold = 'own'
-- and every such step carries one, else its top $top_k percent (n - high_rank < k; ties at the
-- cut flagged). n_in_cell counts all the cell's false positives (negatives), not only those listed.
WITH @slice,
scored AS (
    SELECT t.set_id::VARCHAR AS set_id, t.run_id::VARCHAR AS run_id, t.step_idx,
           coalesce(t.backbone::VARCHAR, '(none)') AS backbone, coalesce(t.action::VARCHAR, '(none)') AS action,
           t.label, t.scope_success, t.score, t.pred_label
    FROM sliced_test_scores t
    WHERE t.set_id = $set_id
),
ranked AS (
    SELECT *,
           count(*) OVER by_score AS high_rank,
           count(*) OVER (by_score ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n,
           count(pred_label) OVER (by_score ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n_decided
    FROM scored
    WINDOW by_score AS (ORDER BY score)
),
decided AS (
    SELECT *,
           ($threshold = 'own' AND n_decided = n) AS own_labels,
           CASE WHEN $threshold = 'own' AND n_decided = n THEN coalesce(pred_label = 1, false)
                ELSE n - high_rank < greatest(ceil($top_k / 100.0 * n), 1) END AS flag
    FROM ranked
),
with_cut AS (
    SELECT *,
           CASE WHEN own_labels THEN NULL ELSE min(score) FILTER (WHERE flag) OVER () END AS cut
    FROM decided
),
cell AS (
    SELECT * FROM with_cut
    WHERE ($cell_backbone = '(all backbones)' OR backbone = $cell_backbone)
      AND ($cell_action = '(all actions)' OR action = $cell_action)
),
@cell_errors
