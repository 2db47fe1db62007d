-- How many runs and steps the current slice rests on, per corpus (and how many runs carry an
-- outcome, success or failure: what a view needing labels can still say a corpus holds).
WITH @slice,
r AS (SELECT corpus, count(*) AS runs, count(*) FILTER (WHERE @known_outcome) AS runs_with_outcome
      FROM sliced_runs GROUP BY corpus),
s AS (SELECT corpus, count(*) AS steps, count(label) AS labeled_steps,
             count(*) FILTER (WHERE label = 1) AS anomalous_steps
      FROM sliced_steps GROUP BY corpus)
SELECT r.corpus, r.runs, r.runs_with_outcome,
       coalesce(s.steps, 0) AS steps,
       coalesce(s.labeled_steps, 0) AS labeled_steps,
       coalesce(s.anomalous_steps, 0) AS anomalous_steps
FROM r LEFT JOIN s USING (corpus)
ORDER BY r.corpus
