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
-- ROC-AUC is the Mann-Whitney statistic: AUC = (R_pos - n_pos (n_pos + 1) / 2) / (n_pos n_neg),
-- R_pos the positives' rank sum with tied scores sharing their average rank (a tie counts one
-- half). Every step gets its placement count, doubled so it stays an integer: 2 x its mid-rank
-- in the cell minus 2 x its mid-rank among the cell's steps of its own label, which is, for a
-- positive, 2 x the negatives below it plus the negatives tied with it (for a negative, the
-- same count of positives). A mid-rank is rank() (the lowest rank of the tie block) plus
-- count(*) (with ORDER BY, up to the block's last peer: its highest), halved. Summed over the
-- positives it is 2 x (R_pos - n_pos (n_pos + 1) / 2). A cell without positives or without
-- negatives has auc NULL (undefined, never 0.5). (A filtered count over an EXCLUDE GROUP frame
-- gives the same number with one sort, but DuckDB took minutes on three million rows.)
--
-- The 95% interval is clustered by run (steps of one run are not independent): DeLong's
-- placement values V10 = place2 / (2 n_neg) of a positive and V01 = 1 - place2 / (2 n_pos) of
-- a negative, summed per run, give Obuchowski's (1997) sums q10, q01, q11 and the run counts
-- runs_pos / runs_neg / n_runs that auditatlas.stats.obuchowski_variance turns into Var(AUC).
WITH @slice,
@grid_run_sums,
@grid_auc_sums
SELECT $set_ids[c.set_key] AS set_id,
       coalesce($backbones[c.backbone_key], '(unlisted)') AS backbone,
       coalesce($actions[c.action_key], '(unlisted)') AS action,
       c.n_pos, c.n_neg, c.auc, c.n_runs, c.runs_pos, c.runs_neg, s.q10, s.q01, s.q11
FROM cells c
LEFT JOIN spread s USING (set_key, backbone_key, action_key)
ORDER BY set_id, backbone, action
