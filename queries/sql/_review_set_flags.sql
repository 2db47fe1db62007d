-- Per step of the slice: how many step-level prediction sets of the supervisions in
-- $supervisions score it (n_sets), and how many rank it in their top decile (n_top): within the
-- set's scored steps of the slice, a rank (1 = highest score, ties share a rank) of at most
-- k = ceil(10% of them). For the review orders (review_doubt_order.sql, review_flagged.sql).
-- A rank of at most k is a score of at least the set's k-th highest (with ties counted), so each
-- set's cut-off is found once and the steps are compared with it, and runs and sets go by
-- number: ranking and grouping every scored step with its run id and set id held 9 GB at a
-- million rooms with three sets. A prediction counts when its step is one of the run's: the
-- store holds every run's steps dense, 0..n_steps-1 (auditatlas/validate.py), so the run's
-- n_steps says it, where a join to the slice's steps held a hash table of every step.
-- The keys are 32-bit: the group of every scored step is most of the query's memory.
review_sets AS (
    SELECT set_id, CAST(row_number() OVER (ORDER BY set_id) AS INTEGER) AS set_key FROM prediction_sets
    WHERE granularity = 'step' AND list_contains($supervisions, supervision)
),
review_run_keys AS (
    SELECT run_id, n_steps, CAST(row_number() OVER (ORDER BY run_id) AS INTEGER) AS run_key FROM sliced_runs
),
review_scored AS (
    SELECT r.set_key, k.run_key, CAST(p.step_idx AS INTEGER) AS step_idx, max(p.score) AS score
    FROM predictions p
    JOIN review_sets r USING (set_id)
    JOIN review_run_keys k USING (run_id)
    WHERE p.score IS NOT NULL AND p.step_idx >= 0 AND p.step_idx < k.n_steps
    GROUP BY r.set_key, k.run_key, CAST(p.step_idx AS INTEGER)
),
review_cuts AS (
    SELECT set_key, min(score) AS cut
    FROM (SELECT set_key, score, row_number() OVER (PARTITION BY set_key ORDER BY score DESC) AS place,
                 count(*) OVER (PARTITION BY set_key) AS set_steps
          FROM review_scored)
    WHERE place <= ceil(set_steps * 0.1)
    GROUP BY set_key
),
review_flag_counts AS (
    SELECT s.run_key, s.step_idx, count(*) AS n_sets, count(*) FILTER (WHERE s.score >= c.cut) AS n_top
    FROM review_scored s JOIN review_cuts c USING (set_key)
    GROUP BY s.run_key, s.step_idx
),
review_flags AS (
    SELECT s.corpus, s.run_id, s.step_idx, s.label, f.n_sets, f.n_top
    FROM review_flag_counts f
    JOIN review_run_keys k USING (run_key)
    JOIN sliced_steps s ON s.run_id = k.run_id AND s.step_idx = f.step_idx
)
