-- grid_cells.sql answered from the ranks stored with test_scores (queries/derived.py): the
-- same rows, one pass and no sort. The query layer picks this text only when the slice keeps
-- every rank group whole (no filter, a corpus filter when each set is of one corpus, or a
-- backbone filter on the per-backbone grid), so a stored rank is the rank the window in
-- grid_cells.sql would compute.
--
-- Each row carries, on the first row of its run in each of the groups (set, backbone, action),
-- (set, backbone), (set, action) and (set), that run's positives and negatives there and the
-- sums of their placement counts (queries/derived.py RUN_COLUMNS), zeros on the run's other
-- rows; the pooling parameters pick the group. So a cell's run sums are one pass over its
-- rows, no grouping by run (which took seconds on millions of rows), and ROC-AUC and its
-- interval sums follow as in grid_cells.sql (a cell without positives or negatives: auc NULL).
-- A backbone or action missing from $backbones / $actions keeps its own name here (the live query pools such rows as
-- '(unlisted)'; the grid lists every backbone and action of the slice, so neither occurs).
WITH @slice,
@grid_run_sums_ranked,
@grid_auc_sums
SELECT c.set_key AS set_id, c.backbone_key AS backbone, c.action_key AS action,
       c.n_pos, c.n_neg, c.auc, c.n_runs, c.runs_pos, c.runs_neg, s.q10, s.q01, s.q11
FROM cells c
LEFT JOIN spread s USING (set_key, backbone_key, action_key)
ORDER BY set_id, backbone, action
