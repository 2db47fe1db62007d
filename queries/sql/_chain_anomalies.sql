-- Chain roles of the slice's anomalies and the step-level sets that can be scored on them
-- (propagation_role_recall_*.sql): CTEs failed, chain_corpora, anomalies, sets. Roles are the
-- steps' chain_role (written by the store writer, auditatlas/chains.py); role NULL is a
-- failure alone in its scope.
failed AS (
    SELECT corpus, run_id, step_idx, coalesce(action, '(none)') AS action, chain_role AS role
    FROM sliced_steps
    WHERE label = 1
),
chain_corpora AS (
    SELECT DISTINCT corpus FROM failed WHERE role IS NOT NULL
),
anomalies AS (
    SELECT run_id, step_idx, action, role
    FROM failed
    WHERE corpus IN (SELECT corpus FROM chain_corpora)
),
sets AS (
    SELECT set_id FROM prediction_sets
    WHERE granularity = 'step' AND corpus IN (SELECT corpus FROM chain_corpora)
)
