-- The grid's ROC-AUC and its run-clustered interval sums from ``placed`` (one row per scored
-- test step: set_key, backbone_key, action_key, run_id, label, place2), for grid_cells.sql and
-- its ranked twin; written after their own CTEs, it ends the WITH list (no trailing comma).
-- place2 is 2 x the step's placement count in its cell (see grid_cells.sql). Per run: m / n
-- positives / negatives and the placement sums; per cell: AUC = sum of the positives'
-- place2 / (2 n_pos n_neg) (Mann-Whitney, ties one half), the runs, and Obuchowski's sums of
-- (V10_i - m_i AUC)^2, (V01_i - n_i AUC)^2 and their product over the runs i.
runs AS (
    SELECT set_key, backbone_key, action_key, run_id,
           count(*) FILTER (WHERE label = 1) AS m,
           count(*) FILTER (WHERE label = 0) AS n,
           coalesce(sum(place2) FILTER (WHERE label = 1), 0) AS pos_place2,
           coalesce(sum(place2) FILTER (WHERE label = 0), 0) AS neg_place2
    FROM placed
    GROUP BY ALL
),
cells AS (
    SELECT set_key, backbone_key, action_key,
           sum(m)::BIGINT AS n_pos, sum(n)::BIGINT AS n_neg,
           CASE WHEN sum(m) > 0 AND sum(n) > 0 THEN sum(pos_place2) / (2.0 * sum(m) * sum(n)) END AS auc,
           count(*) AS n_runs,
           count(*) FILTER (WHERE m > 0) AS runs_pos,
           count(*) FILTER (WHERE n > 0) AS runs_neg
    FROM runs
    GROUP BY ALL
),
deviations AS (
    SELECT r.set_key, r.backbone_key, r.action_key,
           r.pos_place2 / (2.0 * c.n_neg) - r.m * c.auc AS d10,
           r.n - r.neg_place2 / (2.0 * c.n_pos) - r.n * c.auc AS d01
    FROM runs r
    JOIN cells c ON c.set_key = r.set_key AND c.backbone_key = r.backbone_key AND c.action_key = r.action_key
    WHERE c.auc IS NOT NULL
),
spread AS (
    SELECT set_key, backbone_key, action_key,
           sum(d10 * d10) AS q10, sum(d01 * d01) AS q01, sum(d10 * d01) AS q11
    FROM deviations
    GROUP BY ALL
)
