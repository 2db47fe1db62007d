-- grid_cells.sql answered from the ranks stored with test_scores (queries/derived.py): the
-- same rows, one pass and no sort. The query layer picks this text only when the slice keeps
-- every rank group whole (no filter, a corpus filter when each set is of one corpus, or a
-- backbone filter on the per-backbone grid), so a stored rank is the rank the window in
-- grid_cells.sql would compute.
--
-- Each row carries 2 x its placement count within (set, backbone, action), (set, backbone),
-- (set, action) and (set) (queries/derived.py PLACE_COLUMNS); the pooling parameters pick the
-- group the cell ranks in. ROC-AUC and its run-clustered interval sums then follow as in
-- grid_cells.sql (ties count one half; a cell without positives or negatives has auc NULL).
-- A backbone or action missing from $backbones / $actions keeps its own name here (the live query pools such rows as
-- '(unlisted)'; the grid lists every backbone and action of the slice, so neither occurs).
WITH @slice,
placed AS (
    SELECT t.set_id::VARCHAR AS set_key,
           CASE WHEN $by_backbone THEN coalesce(t.backbone::VARCHAR, '(none)') ELSE '(all backbones)' END AS backbone_key,
           CASE WHEN $by_action THEN coalesce(t.action::VARCHAR, '(none)') ELSE '(all actions)' END AS action_key,
           t.run_id::VARCHAR AS run_id, t.label,
           CASE WHEN $by_backbone AND $by_action THEN t.cell_place2
                WHEN $by_backbone THEN t.backbone_place2
                WHEN $by_action THEN t.action_place2
                ELSE t.set_place2 END AS place2
    @scored_test_steps
),
@grid_auc_runs
SELECT c.set_key AS set_id, c.backbone_key AS backbone, c.action_key AS action,
       c.n_pos, c.n_neg, c.auc, c.n_runs, c.runs_pos, c.runs_neg, s.q10, s.q01, s.q11
FROM cells c
LEFT JOIN spread s USING (set_key, backbone_key, action_key)
ORDER BY set_id, backbone, action
