-- Every labeled step of the slice with what the label-free sets say about its label: the top
-- decile counts of _review_set_flags.sql (n_sets, n_top), `contradicting` (the sets that say
-- otherwise than the label: a labeled normal step in their top decile, a labeled anomaly not),
-- `share` (their share of the sets scoring the step; null where none does). In (run, step)
-- order: the doubt order is made from it in auditatlas/analyses/review_queue.py, with the
-- supervised half beside it.
WITH @slice,
@review_set_flags
SELECT s.corpus, s.run_id, s.step_idx, s.label, coalesce(f.n_sets, 0) AS n_sets, coalesce(f.n_top, 0) AS n_top,
       CASE WHEN s.label = 0 THEN coalesce(f.n_top, 0) ELSE coalesce(f.n_sets - f.n_top, 0) END AS contradicting,
       CASE WHEN f.n_sets > 0 THEN (CASE WHEN s.label = 0 THEN f.n_top ELSE f.n_sets - f.n_top END) / f.n_sets END
           AS share
FROM sliced_steps s
LEFT JOIN review_flags f ON f.run_id = s.run_id AND f.step_idx = s.step_idx
WHERE s.label IS NOT NULL
ORDER BY s.run_id, s.step_idx
