-- Every verdict ever given (history included: the agreement figures pick the latest per
-- reviewer, per step, and per step among one seed's random-order verdicts), with the step's
-- released label and its label process (steps.label_source) as stored now.
-- `in_slice`: the step is held and its run is in the slice. `orphaned`: the store no longer
-- holds the step (a re-ingest dropped it); such verdicts are counted, never compared.
-- The released label is read from `steps` itself, not from the sliced steps, so it stays the
-- release's whichever labels a page shows.
WITH @slice
SELECT v.verdict_id, v.corpus, v.run_id, v.step_idx, v.verdict, v.reviewer, v.reviewed_at, v.queue, v.seed,
       s.label AS released_label, s.label_source AS label_process,
       s.step_idx IS NULL AS orphaned,
       (s.step_idx IS NOT NULL AND @in_slice(v.run_id)) AS in_slice
FROM verdicts v
LEFT JOIN steps s ON s.run_id = v.run_id AND s.step_idx = v.step_idx
ORDER BY v.reviewed_at, v.verdict_id
