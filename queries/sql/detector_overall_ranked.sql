-- detector_overall.sql answered from the ranks stored with test_scores and the counts of
-- test_sets (queries/derived.py): the same rows without a sort. The query layer picks this
-- text only when the slice takes each set's test steps whole (no filter, or a corpus filter
-- when each set is of one corpus): the threshold and the ROC-AUC rank over all of them, so
-- the stored rank within the set is the one the window of detector_overall.sql computes.
--
-- A step is in the set's top k when n - set_high < k, set_high counting the set's steps
-- scoring at most its score (so the steps tied at the cut are all flagged), as in
-- detector_overall.sql; set_mid2 is 2 x its mid-rank within the set.
WITH @slice,
counts AS (
    SELECT t.set_id::VARCHAR AS set_id,
           sum(t.n_steps)::BIGINT AS n, sum(t.n_decided)::BIGINT AS n_decided, sum(t.n_runs)::BIGINT AS n_runs
    FROM sliced_test_sets t
    WHERE list_contains($set_ids, t.set_id::VARCHAR)
    GROUP BY 1
),
settings AS (
    SELECT set_id, n, n_runs,
           ($threshold = 'own' AND n_decided = n) AS own_labels,
           greatest(ceil($top_k / 100.0 * n), 1)::BIGINT AS k
    FROM counts
),
scored AS (
    SELECT t.set_id::VARCHAR AS set_id, t.label, t.scope_success, t.score, t.pred_label, t.set_mid2, t.set_high
    @scored_test_steps
),
decided AS (
    SELECT s.*, c.n, c.n_runs, c.own_labels, c.k,
           CASE WHEN c.own_labels THEN coalesce(s.pred_label = 1, false) ELSE c.n - s.set_high < c.k END AS flag
    FROM scored s JOIN settings c USING (set_id)
),
per_set AS (
    SELECT set_id,
           any_value(own_labels) AS own_labels,
           any_value(k) AS top_k_steps,
           min(score) FILTER (WHERE flag) AS lowest_flagged_score,
           count(*) AS n_steps,
           any_value(n_runs) AS n_runs,
           count(*) FILTER (WHERE label = 1) AS n_pos,
           count(*) FILTER (WHERE label = 0) AS n_neg,
           sum(set_mid2) FILTER (WHERE label = 1) / 2.0 AS rank_sum_pos,
           @flag_counts
    FROM decided
    GROUP BY set_id
)
SELECT set_id,
       * EXCLUDE (set_id, rank_sum_pos, lowest_flagged_score),
       CASE WHEN own_labels THEN NULL ELSE lowest_flagged_score END AS cut,
       @auc
FROM per_set
ORDER BY set_id
