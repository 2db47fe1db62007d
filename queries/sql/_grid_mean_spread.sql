-- The grid's means and their run-clustered variance, after _grid_auc_sums.sql and a CTE
-- set_detector (set_key, detector) naming each set's detector. The bottom row is, per backbone
-- and detector, the mean over its defined cells (a cell: the mean over its defined seeds); the
-- right column is, per backbone and action, the mean over the detectors' defined cells. Each is
-- a weighted sum of per-set ROC-AUCs, sum_k w_k AUC_k, with w_k = 1 / (seeds in the cell x cells
-- in the mean).
--
-- The cells of one mean share runs, so their errors are correlated and the mean's variance does
-- not follow from the cells' own. It is taken from each run's influence on each AUC instead:
-- u_ki = (V10_ki - m_ki AUC_k) / M_k + (V01_ki - n_ki AUC_k) / N_k (DeLong's placement sums of
-- run i in cell k, as in Obuchowski's q10 / q01, over the cell's positives M_k and negatives
-- N_k). Summed over the mean's cells per run, z_i = sum_k w_k u_ki, and
-- Var = I / (I - 1) sum_i z_i^2 over the I runs the mean touches. For one cell this is
-- Obuchowski's variance with one small-sample factor for all three sums instead of one each.
-- Variation between seeds (their fits) is not in it: the seed spread says that.
run_influence AS (
    SELECT v.set_key, v.backbone_key, v.action_key, v.run_id,
           (v.rp::DOUBLE / (2.0 * c.n_neg) - v.m * c.auc) / c.n_pos
               + (v.n * (1 - c.auc) - v.rq::DOUBLE / (2.0 * c.n_pos)) / c.n_neg AS u
    FROM run_sums v
    JOIN cells c USING (set_key, backbone_key, action_key)
    WHERE v.m + v.n > 0 AND c.auc IS NOT NULL
),
defined AS (
    -- A set's cell has its own interval with two runs holding a positive and two a negative.
    SELECT c.set_key, c.backbone_key, c.action_key, d.detector, c.auc,
           c.runs_pos >= 2 AND c.runs_neg >= 2 AS has_interval,
           count(*) OVER (PARTITION BY c.backbone_key, c.action_key, d.detector) AS seeds
    FROM cells c
    JOIN set_detector d USING (set_key)
    WHERE c.auc IS NOT NULL
),
grid_cell AS (
    SELECT backbone_key, action_key, detector, avg(auc) AS auc, bool_and(has_interval) AS has_interval
    FROM defined
    GROUP BY ALL
),
detector_mean AS (
    SELECT backbone_key, detector, avg(auc) AS mean, count(*) AS n_cells,
           count(*) FILTER (WHERE has_interval) AS n_cells_with_interval
    FROM grid_cell
    GROUP BY ALL
),
action_mean AS (
    SELECT backbone_key, action_key, avg(auc) AS mean, count(*) AS n_cells,
           count(*) FILTER (WHERE has_interval) AS n_cells_with_interval
    FROM grid_cell
    GROUP BY ALL
),
cell_weight AS (
    -- Weights per set's cell first (a few thousand rows), then one join with the runs: joined
    -- together, DuckDB paired every run with every detector of its backbone before the cells.
    SELECT d.set_key, d.backbone_key, d.action_key, d.detector,
           1.0 / (d.seeds * dm.n_cells) AS w_detector, 1.0 / (d.seeds * am.n_cells) AS w_action
    FROM defined d
    JOIN detector_mean dm ON dm.backbone_key = d.backbone_key AND dm.detector = d.detector
    JOIN action_mean am ON am.backbone_key = d.backbone_key AND am.action_key = d.action_key
),
weighted AS (
    SELECT r.run_id, r.u, w.backbone_key, w.action_key, w.detector, w.w_detector, w.w_action
    FROM run_influence r
    JOIN cell_weight w USING (set_key, backbone_key, action_key)
),
detector_runs AS (
    SELECT backbone_key, detector, run_id, sum(w_detector * u) AS z FROM weighted GROUP BY ALL
),
action_runs AS (
    SELECT backbone_key, action_key, run_id, sum(w_action * u) AS z FROM weighted GROUP BY ALL
),
detector_spread AS (
    SELECT backbone_key, detector, count(*) AS n_runs,
           CASE WHEN count(*) >= 2 THEN count(*) / (count(*) - 1.0) * sum(z * z) END AS var
    FROM detector_runs
    GROUP BY ALL
),
action_spread AS (
    SELECT backbone_key, action_key, count(*) AS n_runs,
           CASE WHEN count(*) >= 2 THEN count(*) / (count(*) - 1.0) * sum(z * z) END AS var
    FROM action_runs
    GROUP BY ALL
),
means AS (
    SELECT 'detector' AS mean_of, m.backbone_key, NULL AS action_key, m.detector, m.mean, m.n_cells,
           m.n_cells_with_interval, s.n_runs, s.var
    FROM detector_mean m LEFT JOIN detector_spread s USING (backbone_key, detector)
    UNION ALL
    SELECT 'action', m.backbone_key, m.action_key, NULL, m.mean, m.n_cells, m.n_cells_with_interval, s.n_runs, s.var
    FROM action_mean m LEFT JOIN action_spread s USING (backbone_key, action_key)
)
