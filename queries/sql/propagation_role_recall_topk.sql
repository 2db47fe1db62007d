-- Recall by chain role with a top-k% cut: of a set's n scored steps in the slice, the ones
-- scoring at least the m-th highest score, m = ceil(k% x n), are flagged (ties at the cut are
-- all flagged; a step is flagged exactly when fewer than m steps score strictly higher).
-- The cut is read from each set's sorted score list (a window rank over every scored step is
-- about 8x slower on a 100,000-room store).
-- MAADBench Figures 8 and 11. Roles are the steps' chain_role (auditatlas/chains.py, written
-- by the store writer; role NULL: a failure alone in its scope). Only corpora with a chain
-- in the slice, only step-level sets about them, and no training rows (split 'train').
-- One row per (set, anomalous, role, action): steps the set scored and how many it flagged;
-- summed over a set, the rows give its scored and flagged steps in the slice. One pass: the
-- scored steps are left-joined to the anomalies (a join per output is about 25% slower).
WITH @slice,
@chain_anomalies,
scored AS (
    SELECT p.set_id, p.run_id, p.step_idx, p.score
    FROM predictions p
    WHERE p.set_id IN (SELECT set_id FROM sets)
      AND p.step_idx IS NOT NULL
      AND coalesce(p.split, 'all') <> 'train'
      AND p.score IS NOT NULL
      AND @in_slice(p.run_id)
),
cuts AS (
    SELECT set_id,
           list_sort(list(score), 'DESC')[CAST(ceil(CAST($top_k AS DECIMAL(18, 6)) * count(*) / 100) AS BIGINT)] AS cut
    FROM scored
    GROUP BY set_id
)
SELECT s.set_id, a.run_id IS NOT NULL AS anomalous, a.role, a.action,
       count(*) AS steps, count(*) FILTER (WHERE s.score >= c.cut) AS flagged
FROM scored s
JOIN cuts c USING (set_id)
LEFT JOIN anomalies a ON a.run_id = s.run_id AND a.step_idx = s.step_idx
GROUP BY ALL
ORDER BY ALL
