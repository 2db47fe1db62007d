-- How far the verdicts reach into the slice, for the label caption every view shows
-- (auditatlas/analyses/labels_in_use.py): the slice's steps holding a latest verdict
-- (_latest_verdicts.sql), those whose verdict gives another label than the release (changed:
-- anomaly or normal on a step released otherwise, an unlabeled one included), those whose
-- verdict equals the released label (agreed) and the unsure ones. Asked for under the released
-- labels (the analysis does), so `s.label` is the release's.
WITH @slice, @latest_verdicts
SELECT count(*) AS reviewed_steps,
       count(*) FILTER (WHERE v.label IS NOT NULL AND v.label IS DISTINCT FROM s.label) AS changed_steps,
       count(*) FILTER (WHERE v.label = s.label) AS agreed_steps,
       count(*) FILTER (WHERE v.label IS NULL) AS unsure_steps
FROM latest_verdicts v
JOIN sliced_steps s ON s.run_id = v.run_id AND s.step_idx = v.step_idx
