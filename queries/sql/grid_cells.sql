-- ROC-AUC cells of the per-action AUROC grid (MAADBench Figure 6), one row per
-- (backbone, action, prediction set), over the set's labeled, scored test steps (split 'test',
-- or 'all' for sets without a split, such as judges) in the shared slice.
--
-- $by_backbone / $by_action: group per backbone / per action, or pool them ('(all backbones)',
-- '(all actions)'), so one query serves the per-backbone grids and the pooled grid.
-- $set_ids, $backbones, $actions: the sets, and the backbone and action labels the cells may
-- take (the grid_actions rows; with pooling, the pooled label). Each cell is keyed by the three
-- positions in these lists: sorting on small integers instead of strings makes the ranking
-- several times faster on a large store. A step whose backbone or action is not listed gets
-- position 0 and the label '(unlisted)'.
--
-- ROC-AUC is the Mann-Whitney rank sum: AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg),
-- where R_pos sums the positives' ranks and tied scores share their average rank (so a tie
-- counts one half). One sort per cell gives both ends of a tie block: rank() is its lowest
-- rank, and cume_dist() x n its highest (the rows up to and including its peers); the average
-- is their midpoint. A cell without positives or without negatives has auc NULL (undefined,
-- never 0.5).
WITH @slice,
scored AS (
    SELECT list_position($set_ids, t.set_id::VARCHAR) AS set_pos,
           coalesce(list_position($backbones,
               CASE WHEN $by_backbone THEN coalesce(t.backbone::VARCHAR, '(none)') ELSE '(all backbones)' END), 0) AS backbone_pos,
           coalesce(list_position($actions,
               CASE WHEN $by_action THEN coalesce(t.action::VARCHAR, '(none)') ELSE '(all actions)' END), 0) AS action_pos,
           t.label, t.score
    @scored_test_steps
),
ranked AS (
    SELECT set_pos, backbone_pos, action_pos, label,
           rank() OVER cell AS low_rank,
           cume_dist() OVER cell AS high_share
    FROM scored
    WINDOW cell AS (PARTITION BY set_pos, backbone_pos, action_pos ORDER BY score)
),
sums AS (
    SELECT set_pos, backbone_pos, action_pos,
           count(*) FILTER (WHERE label = 1) AS n_pos,
           count(*) FILTER (WHERE label = 0) AS n_neg,
           (sum(low_rank) FILTER (WHERE label = 1)
            + count(*) * sum(high_share) FILTER (WHERE label = 1)) / 2.0 AS rank_sum_pos
    FROM ranked
    GROUP BY ALL
)
SELECT $set_ids[set_pos] AS set_id,
       coalesce($backbones[backbone_pos], '(unlisted)') AS backbone,
       coalesce($actions[action_pos], '(unlisted)') AS action,
       n_pos, n_neg,
       @auc
FROM sums
ORDER BY set_id, backbone, action
