-- Per step of the slice: how many step-level prediction sets of the supervisions in
-- $supervisions score it (n_sets), and how many rank it in their top decile (n_top): within the
-- set's scored steps of the slice, a rank (1 = highest score, ties share a rank) of at most
-- ceil(10% of them). For the review orders (review_doubt_order.sql, review_flagged.sql).
review_sets AS (
    SELECT set_id FROM prediction_sets
    WHERE granularity = 'step' AND list_contains($supervisions, supervision)
),
review_scored AS (
    SELECT p.set_id, s.corpus, s.run_id, s.step_idx, s.label, max(p.score) AS score
    FROM predictions p
    JOIN review_sets USING (set_id)
    JOIN sliced_steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
    WHERE p.score IS NOT NULL
    GROUP BY p.set_id, s.corpus, s.run_id, s.step_idx, s.label
),
review_ranked AS (
    SELECT *, rank() OVER (PARTITION BY set_id ORDER BY score DESC) AS set_rank,
           count(*) OVER (PARTITION BY set_id) AS set_steps
    FROM review_scored
),
review_flags AS (
    SELECT corpus, run_id, step_idx, label, count(*) AS n_sets,
           count(*) FILTER (WHERE set_rank <= ceil(set_steps * 0.1)) AS n_top
    FROM review_ranked
    GROUP BY corpus, run_id, step_idx, label
)
