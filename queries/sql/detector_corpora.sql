-- Corpora that have prediction sets, with how many sets of each granularity.
SELECT corpus,
       count(*) FILTER (WHERE granularity = 'step') AS step_sets,
       count(*) FILTER (WHERE granularity = 'run') AS run_sets,
       count(*) FILTER (WHERE granularity NOT IN ('step', 'run') OR granularity IS NULL) AS other_sets
FROM prediction_sets
GROUP BY corpus
ORDER BY corpus
