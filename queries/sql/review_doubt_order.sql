-- The doubt order (auditatlas/analyses/review_queue.py): the labeled steps of the slice whose
-- label either half doubts, most doubtful first.
-- Label-free half: the top decile counts of _review_set_flags.sql (n_sets, n_top),
-- `contradicting` (the sets that say otherwise than the label: a labeled normal step in their
-- top decile, a labeled anomaly not), `share` (their share of the sets scoring the step; null
-- where none does); it doubts a labeled normal step most sets flag and a labeled anomaly that
-- sets score and none flags (`free_contradicts`).
-- Supervised half: the caller's table $supervised (run_id, step_idx, self_confidence,
-- label_issue), one row per step it could be computed on; it doubts cleanlab's label issues.
-- `doubt`: one minus the out-of-fold probability of the label where the supervised half has the
-- step, else the label-free share. Ties: the share, the sets contradicting, then run and step, so
-- the order is the same on every run.
WITH @slice,
@review_set_flags,
-- Only the doubted steps are joined to the steps and the half: the label-free doubts (from the
-- flags alone) and the half's label issues, a few percent of the labeled steps. Joined on every
-- labeled step, a million-room store's 9 million run ids were held twice.
labeled_flags AS (
    SELECT k.run_id, f.step_idx, s.label, f.n_sets, f.n_top
    FROM review_flag_counts f
    JOIN review_run_keys k USING (run_key)
    JOIN steps s ON s.run_id = k.run_id AND s.step_idx = f.step_idx
    WHERE s.label IS NOT NULL
),
free AS (
    SELECT run_id, step_idx FROM labeled_flags
    WHERE (label = 0 AND 2 * n_top > n_sets) OR (label = 1 AND n_top = 0 AND n_sets > 0)
),
issues AS (
    SELECT CAST(run_id AS VARCHAR) AS run_id, CAST(step_idx AS BIGINT) AS step_idx
    FROM @frame($supervised) WHERE label_issue
),
-- Each doubted step once, with whether the label-free half doubts it (the rule written once, above).
doubted AS (
    SELECT run_id, step_idx, bool_or(by_free) AS by_free
    FROM (SELECT run_id, step_idx, true AS by_free FROM free
          UNION ALL SELECT run_id, step_idx, false AS by_free FROM issues)
    GROUP BY run_id, step_idx
),
half AS (
    SELECT CAST(h.run_id AS VARCHAR) AS run_id, CAST(h.step_idx AS BIGINT) AS step_idx,
           CAST(h.self_confidence AS DOUBLE) AS self_confidence, CAST(h.label_issue AS BOOLEAN) AS label_issue
    FROM @frame($supervised) h
    SEMI JOIN doubted d ON d.run_id = CAST(h.run_id AS VARCHAR) AND d.step_idx = CAST(h.step_idx AS BIGINT)
),
doubted_flags AS (
    SELECT k.run_id, f.step_idx, f.n_sets, f.n_top
    FROM review_flag_counts f
    JOIN review_run_keys k USING (run_key)
    SEMI JOIN doubted d ON d.run_id = k.run_id AND d.step_idx = f.step_idx
),
judged AS (
    SELECT s.corpus, s.run_id, s.step_idx, s.label, coalesce(f.n_sets, 0) AS n_sets,
           coalesce(f.n_top, 0) AS n_top,
           CASE WHEN s.label = 0 THEN coalesce(f.n_top, 0) ELSE coalesce(f.n_sets - f.n_top, 0) END
               AS contradicting,
           CASE WHEN f.n_sets > 0 THEN (CASE WHEN s.label = 0 THEN f.n_top ELSE f.n_sets - f.n_top END) / f.n_sets END
               AS share,
           h.self_confidence, coalesce(h.label_issue, false) AS label_issue, d.by_free AS free_contradicts
    -- steps, not sliced_steps: the flags read that too, and a CTE read twice is materialized
    -- (a million-room store's 9 million steps held at once).
    FROM steps s
    JOIN doubted d ON d.run_id = s.run_id AND d.step_idx = s.step_idx
    LEFT JOIN doubted_flags f ON f.run_id = s.run_id AND f.step_idx = s.step_idx
    LEFT JOIN half h ON h.run_id = s.run_id AND h.step_idx = s.step_idx
    WHERE s.label IS NOT NULL AND @in_slice(s.run_id)
)
SELECT *, coalesce(1 - self_confidence, CASE WHEN free_contradicts THEN share END) AS doubt
FROM judged
ORDER BY doubt DESC NULLS LAST, share DESC NULLS LAST, contradicting DESC, run_id, step_idx
