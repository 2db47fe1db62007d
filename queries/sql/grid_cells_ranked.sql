-- grid_cells.sql answered from the ranks stored with test_scores (queries/derived.py): the
-- same rows, one pass and no sort. The query layer picks this text only when the slice keeps
-- every rank group whole (no filter, a corpus filter when each set is of one corpus, or a
-- backbone filter on the per-backbone grid), so a stored rank is the rank the window in
-- grid_cells.sql would compute.
--
-- Each row carries 2 x its mid-rank within (set, backbone, action), (set, backbone),
-- (set, action) and (set); the pooling parameters pick the group the cell ranks in. With the
-- rank sum, ROC-AUC is the Mann-Whitney formula of grid_cells.sql (ties count one half; a
-- cell without positives or without negatives has auc NULL). A backbone or action missing
-- from $backbones / $actions keeps its own name here (the live query pools such rows as
-- '(unlisted)'; the grid lists every backbone and action of the slice, so neither occurs).
WITH @slice,
scored AS (
    SELECT t.set_id::VARCHAR AS set_id,
           CASE WHEN $by_backbone THEN coalesce(t.backbone::VARCHAR, '(none)') ELSE '(all backbones)' END AS backbone,
           CASE WHEN $by_action THEN coalesce(t.action::VARCHAR, '(none)') ELSE '(all actions)' END AS action,
           t.label,
           CASE WHEN $by_backbone AND $by_action THEN t.cell_mid2
                WHEN $by_backbone THEN t.backbone_mid2
                WHEN $by_action THEN t.action_mid2
                ELSE t.set_mid2 END AS mid2
    @scored_test_steps
),
sums AS (
    SELECT set_id, backbone, action,
           count(*) FILTER (WHERE label = 1) AS n_pos,
           count(*) FILTER (WHERE label = 0) AS n_neg,
           sum(mid2) FILTER (WHERE label = 1) / 2.0 AS rank_sum_pos
    FROM scored
    GROUP BY ALL
)
SELECT set_id, backbone, action, n_pos, n_neg,
       @auc
FROM sums
ORDER BY set_id, backbone, action
