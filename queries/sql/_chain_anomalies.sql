-- Chain roles of the slice's anomalies and the step-level sets that can be scored on them
-- (propagation_role_recall_*.sql): CTEs failed, chain_corpora, anomalies, sets. Roles follow
-- auditatlas/chains.py; role NULL is a failure alone in its scope.
failed AS (
    SELECT corpus, run_id, step_idx, coalesce(action, '(none)') AS action,
           count(*) OVER scope_window AS failures,
           min(step_idx) OVER scope_window AS first_idx,
           max(step_idx) OVER scope_window AS last_idx
    FROM sliced_steps
    WHERE label = 1
    WINDOW scope_window AS (PARTITION BY run_id, scope)
),
chain_corpora AS (
    SELECT DISTINCT corpus FROM failed WHERE failures >= 2
),
anomalies AS (
    SELECT run_id, step_idx, action,
           CASE WHEN failures < 2 THEN NULL
                WHEN step_idx = first_idx THEN 'origin'
                WHEN step_idx = last_idx THEN 'down'
                ELSE 'mid' END AS role
    FROM failed
    WHERE corpus IN (SELECT corpus FROM chain_corpora)
),
sets AS (
    SELECT set_id FROM prediction_sets
    WHERE granularity = 'step' AND corpus IN (SELECT corpus FROM chain_corpora)
)
