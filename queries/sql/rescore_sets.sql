-- Re-scored prediction sets (source 'rescore') of the chosen corpora ($corpora: empty = all),
-- newest first, with their provenance (params JSON) and their ROC-AUC over labeled test steps:
-- the Mann-Whitney rank sum, tied scores sharing their average rank (ties count one half),
-- computed over tie blocks. test_roc_auc is NULL when the test steps hold a single class
-- (undefined, never 0.5).
WITH @rescore_sets_chosen,
scored AS (
    SELECT p.set_id, s.label, p.score
    FROM predictions_stored p
    JOIN sets USING (set_id)
    JOIN steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
    WHERE p.step_idx IS NOT NULL AND p.split = 'test' AND s.label IS NOT NULL
      AND p.score IS NOT NULL AND NOT isnan(p.score)
),
blocks AS (
    SELECT set_id, score, count(*) FILTER (WHERE label = 1) AS pos, count(*) AS n
    FROM scored GROUP BY set_id, score
),
ranked AS (
    SELECT *, coalesce(sum(n) OVER (PARTITION BY set_id ORDER BY score
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS below
    FROM blocks
),
auc AS (
    SELECT set_id, sum(pos)::BIGINT AS n_pos, sum(n - pos)::BIGINT AS n_neg,
           sum(pos * (below + (n + 1) / 2.0)) AS rank_sum_pos
    FROM ranked GROUP BY set_id
),
@rescore_sets_listed
