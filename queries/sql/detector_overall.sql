-- Per prediction set, over its labeled, scored test steps (split 'test', or 'all' for sets
-- without a split) in the shared slice (MAADBench Figure 5): ROC-AUC, the decision threshold,
-- confusion counts, and recall on silent anomalies (label 1, scope still succeeded) and loud
-- ones (scope failed). One sort per set serves the ROC-AUC and the top-k cut.
--
-- ROC-AUC: Mann-Whitney rank sum with average ranks for ties, as in grid_cells.sql (sets
-- keyed by their position in $set_ids: an integer sort key is much cheaper than a string).
-- Threshold ($threshold, $top_k): with 'own', a set whose every such step carries a pred_label
-- uses its own decisions; otherwise (and always with 'top_k') it flags its top $top_k percent:
-- every step scoring at least the k-th highest score, k = ceil(top_k% x n), so the steps tied
-- at the cut are all flagged (a few more than k% when scores tie). A step scoring s is in
-- that top exactly when fewer than k steps score above s, i.e. n - high_rank(s) < k, where
-- high_rank(s) = cume_dist x n counts the steps scoring at most s.
WITH @slice,
scored AS (
    SELECT list_position($set_ids, t.set_id::VARCHAR) AS set_pos, t.run_id::VARCHAR AS run_id, t.label, t.scope_success, t.score, t.pred_label
    @scored_test_steps
),
ranked AS (
    SELECT set_pos, run_id, label, scope_success, score, pred_label,
           rank() OVER by_score AS low_rank,
           cume_dist() OVER by_score AS high_share,
           count(*) OVER (by_score ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n,
           count(pred_label) OVER (by_score ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n_decided
    FROM scored
    WINDOW by_score AS (PARTITION BY set_pos ORDER BY score)
),
flagged AS (
    SELECT *,
           ($threshold = 'own' AND n_decided = n) AS own_labels,
           greatest(ceil($top_k / 100.0 * n), 1)::BIGINT AS k
    FROM ranked
),
decided AS (
    SELECT *,
           CASE WHEN own_labels THEN coalesce(pred_label = 1, false) ELSE n - round(high_share * n) < k END AS flag
    FROM flagged
),
per_set AS (
    SELECT set_pos,
           any_value(own_labels) AS own_labels,
           any_value(k) AS top_k_steps,
           min(score) FILTER (WHERE flag) AS lowest_flagged_score,
           count(*) AS n_steps,
           count(DISTINCT run_id) AS n_runs,
           count(*) FILTER (WHERE label = 1) AS n_pos,
           count(*) FILTER (WHERE label = 0) AS n_neg,
           (sum(low_rank) FILTER (WHERE label = 1) + any_value(n) * sum(high_share) FILTER (WHERE label = 1)) / 2.0 AS rank_sum_pos,
           @flag_counts
    FROM decided
    GROUP BY set_pos
)
SELECT $set_ids[set_pos] AS set_id,
       * EXCLUDE (set_pos, rank_sum_pos, lowest_flagged_score),
       CASE WHEN own_labels THEN NULL ELSE lowest_flagged_score END AS cut,
       @auc
FROM per_set
ORDER BY set_id
