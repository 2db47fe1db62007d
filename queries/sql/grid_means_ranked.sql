-- grid_means.sql answered from the ranks stored with test_scores, as grid_cells_ranked.sql
-- answers grid_cells.sql (the query layer picks it under the same conditions).
WITH @slice,
@grid_run_sums_ranked,
@grid_auc_sums,
set_detector AS (
    SELECT $set_ids[i] AS set_key, $set_detectors[i] AS detector FROM range(1, len($set_ids) + 1) r(i)
),
@grid_mean_spread
SELECT mean_of, backbone_key AS backbone, action_key AS action, detector, mean, n_cells,
       n_cells_with_interval, n_runs, var
FROM means
ORDER BY mean_of, backbone, action, detector
