-- Recall by chain role with each set's own decision (pred_label = 1 flags a step); steps
-- the set leaves without a label are not scored.
-- MAADBench Figures 8 and 11. Roles are the steps' chain_role (auditatlas/chains.py, written
-- by the store writer; role NULL: a failure alone in its scope). Only corpora with a chain
-- in the slice, only step-level sets about them, and no training rows (split 'train').
-- One row per (set, anomalous, role, action): steps the set scored and how many it flagged;
-- summed over a set, the rows give its scored and flagged steps in the slice. One pass: the
-- scored steps are left-joined to the anomalies (a join per output is about 25% slower).
WITH @slice,
@chain_anomalies,
scored AS (
    SELECT p.set_id, p.run_id, p.step_idx, p.pred_label = 1 AS flagged
    FROM predictions p
    WHERE p.set_id IN (SELECT set_id FROM sets)
      AND p.step_idx IS NOT NULL
      AND coalesce(p.split, 'all') <> 'train'
      AND p.pred_label IS NOT NULL
      AND @in_slice(p.run_id)
)
SELECT s.set_id, a.run_id IS NOT NULL AS anomalous, a.role, a.action,
       count(*) AS steps, count(*) FILTER (WHERE s.flagged) AS flagged
FROM scored s
LEFT JOIN anomalies a ON a.run_id = s.run_id AND a.step_idx = s.step_idx
GROUP BY ALL
ORDER BY ALL
