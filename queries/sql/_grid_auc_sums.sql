-- The grid's ROC-AUC and its run-clustered interval sums from ``run_sums``: one row per run of
-- a cell (set_key, backbone_key, action_key, m / n its positives / negatives there, rp / rq the
-- sums of their place2), rows of zeros allowed (they count nowhere). For grid_cells.sql and
-- its ranked twin; written after their own CTEs, it ends the WITH list (no trailing comma).
-- AUC = sum(rp) / (2 n_pos n_neg) (Mann-Whitney, ties one half). With run i's placement sums
-- V10_i = rp_i / (2 n_neg) and V01_i = n_i - rq_i / (2 n_pos), Obuchowski's (1997) q10, q01,
-- q11 (sums over runs of (V10_i - m_i AUC)^2, (V01_i - n_i AUC)^2 and their product) are
-- expanded into sums of products, so each cell is one pass over its runs, with no second
-- pass once AUC is known (auditatlas.stats.obuchowski_variance takes them from there).
run_values AS (
    -- Only a run's own rows (the twin's other rows hold zeros), as doubles once: the products
    -- below overflow integers on large sets.
    SELECT set_key, backbone_key, action_key, m::DOUBLE AS m, n::DOUBLE AS n, rp::DOUBLE AS rp, rq::DOUBLE AS rq
    FROM run_sums
    WHERE m + n > 0
),
cell_sums AS (
    SELECT set_key, backbone_key, action_key,
           sum(m)::BIGINT AS n_pos, sum(n)::BIGINT AS n_neg, sum(rp) AS rp_sum,
           count(*) AS n_runs, count(*) FILTER (WHERE m > 0) AS runs_pos, count(*) FILTER (WHERE n > 0) AS runs_neg,
           sum(rp * rp) AS s_pp, sum(m * rp) AS s_mp, sum(m * m) AS s_mm,
           sum(rq * rq) AS s_qq, sum(n * rq) AS s_nq, sum(n * n) AS s_nn,
           sum(rp * rq) AS s_pq, sum(rp * n) AS s_pn, sum(m * rq) AS s_mq, sum(m * n) AS s_mn
    FROM run_values
    GROUP BY ALL
),
cells AS (
    SELECT *, CASE WHEN n_pos > 0 AND n_neg > 0 THEN rp_sum / (2.0 * n_pos * n_neg) END AS auc
    FROM cell_sums
),
spread AS (
    SELECT set_key, backbone_key, action_key,
           -- sum (rp/(2N) - m A)^2
           s_pp / (4.0 * n_neg * n_neg) - auc / n_neg * s_mp + auc * auc * s_mm AS q10,
           -- sum (n (1 - A) - rq/(2M))^2
           (1 - auc) * (1 - auc) * s_nn - (1 - auc) / n_pos * s_nq + s_qq / (4.0 * n_pos * n_pos) AS q01,
           -- sum (rp/(2N) - m A)(n (1 - A) - rq/(2M))
           (1 - auc) / (2.0 * n_neg) * s_pn - s_pq / (4.0 * n_neg * n_pos)
               - auc * (1 - auc) * s_mn + auc / (2.0 * n_pos) * s_mq AS q11
    FROM cells
    WHERE auc IS NOT NULL
)
