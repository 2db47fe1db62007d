-- The doubt order (auditatlas/analyses/review_queue.py): the labeled steps of the slice whose
-- label either half doubts, most doubtful first.
-- $doubted: the doubted steps by run number (_review_step_numbers.sql) and step index, with
-- their released label; the label-free half's top decile counts (n_sets, n_top:
-- auditatlas/analyses/review_flags.py) and whether that half doubts the step
-- (`free_contradicts`: a labeled normal step most sets flag, a labeled anomaly that sets score
-- and none flags); the supervised half's self-confidence where it has the step (`in_half`) and
-- whether cleanlab calls it a label issue (the supervised half's doubts).
-- `contradicting`: the sets that say otherwise than the label; `share`: their share of the sets
-- scoring the step (null where none does). `doubt`: one minus the out-of-fold probability of the
-- label where the supervised half has the step, else the label-free share. Ties: the share, the
-- sets contradicting, then run and step, so the order is the same on every run.
-- Joined on numbers, not run ids: the doubted steps of a million-room store are over a million.
WITH @slice,
@review_step_numbers,
judged AS (
    SELECT k.corpus, k.run_id, CAST(d.step_idx AS BIGINT) AS step_idx, CAST(d.label AS TINYINT) AS label,
           CAST(d.n_sets AS BIGINT) AS n_sets, CAST(d.n_top AS BIGINT) AS n_top,
           CAST(CASE WHEN d.label = 0 THEN d.n_top ELSE d.n_sets - d.n_top END AS BIGINT) AS contradicting,
           CASE WHEN d.n_sets > 0 THEN (CASE WHEN d.label = 0 THEN d.n_top ELSE d.n_sets - d.n_top END) / d.n_sets END
               AS share,
           CASE WHEN d.in_half THEN d.self_confidence END AS self_confidence,
           d.label_issue, d.free_contradicts
    FROM @frame($doubted) d JOIN review_step_numbers k USING (run_no)
)
SELECT *, coalesce(1 - self_confidence, CASE WHEN free_contradicts THEN share END) AS doubt
FROM judged
ORDER BY doubt DESC NULLS LAST, share DESC NULLS LAST, contradicting DESC, run_id, step_idx
