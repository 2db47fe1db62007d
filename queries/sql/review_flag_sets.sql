-- The step-level prediction sets of the supervisions in $supervisions, the review flags' voters.
SELECT set_id FROM prediction_sets
WHERE granularity = 'step' AND list_contains($supervisions, supervision)
ORDER BY set_id
