-- The AUROC grid's bottom row (per backbone and detector, the mean over actions) and right
-- column (per backbone and action, the mean over detectors), each with its run-clustered
-- variance (_grid_mean_spread.sql says how): one row per mean, mean_of 'detector' or 'action'.
-- The same slice, sets and keys as grid_cells.sql; $set_detectors names each set's detector,
-- in the order of $set_ids.
WITH @slice,
@grid_run_sums,
@grid_auc_sums,
set_detector AS (
    SELECT i AS set_key, $set_detectors[i] AS detector FROM range(1, len($set_ids) + 1) r(i)
),
@grid_mean_spread
SELECT mean_of, coalesce($backbones[backbone_key], '(unlisted)') AS backbone,
       CASE WHEN mean_of = 'action' THEN coalesce($actions[action_key], '(unlisted)') END AS action,
       detector, mean, n_cells, n_cells_with_interval, n_runs, var
FROM means
ORDER BY mean_of, backbone, action, detector
