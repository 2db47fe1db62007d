-- grid_errors.sql answered from the ranks stored with test_scores and the counts of test_sets
-- (queries/derived.py): the same rows without sorting the set's steps. The query layer picks
-- this text only when the slice takes the set's test steps whole (no filter, or a corpus
-- filter when each set is of one corpus): the threshold is over all of them, and set_high
-- (the set's steps scoring at most this score) is then the high rank the window of
-- grid_errors.sql computes. A step is flagged when n - set_high < k (ties at the cut all
-- flagged), or by its own pred_label; only the cell's errors are sorted, to list them.
WITH @slice,
counts AS (
    SELECT sum(t.n_steps)::BIGINT AS n, sum(t.n_decided)::BIGINT AS n_decided
    FROM sliced_test_sets t
    WHERE t.set_id = $set_id
),
settings AS (
    SELECT ($threshold = 'own' AND n_decided = n) AS own_labels, n,
           greatest(ceil($top_k / 100.0 * n), 1)::BIGINT AS k
    FROM counts
),
-- The cut, over all the set's steps: reads their scores and high ranks only. Both this and
-- the cell read test_scores itself, not the sliced CTE: a CTE read twice is materialised
-- whole (5.5M rows at a million rooms). The only slice this text runs under is a corpus
-- filter, which takes a set whole or not at all; in the latter case counts is NULL, no step
-- is flagged either way, and the answer is empty, as the live query's.
lowest AS (
    SELECT min(t.score) AS lowest_flagged_score
    FROM test_scores t CROSS JOIN settings c
    WHERE t.set_id = $set_id AND c.n - t.set_high < c.k
),
-- The cell's steps: the only rows whose run ids are read (the file is sorted by set, backbone
-- and action, so the others' row groups are skipped).
cell AS (
    SELECT t.set_id::VARCHAR AS set_id, t.run_id::VARCHAR AS run_id, t.step_idx,
           coalesce(t.backbone::VARCHAR, '(none)') AS backbone, coalesce(t.action::VARCHAR, '(none)') AS action,
           t.label, t.scope_success, t.score, t.pred_label, c.own_labels,
           CASE WHEN c.own_labels THEN coalesce(t.pred_label = 1, false) ELSE c.n - t.set_high < c.k END AS flag,
           CASE WHEN c.own_labels THEN NULL ELSE l.lowest_flagged_score END AS cut
    FROM test_scores t CROSS JOIN settings c CROSS JOIN lowest l
    WHERE t.set_id = $set_id
      AND ($cell_backbone = '(all backbones)' OR coalesce(t.backbone::VARCHAR, '(none)') = $cell_backbone)
      AND ($cell_action = '(all actions)' OR coalesce(t.action::VARCHAR, '(none)') = $cell_action)
),
@cell_errors
