-- Every prediction keyed to exactly one step, run or config capability.
-- Stored rows pass through; released rankings (a judge's top pick plus its ranking of a run's
-- steps, keyed by CatchBench run key) become one score per step of each run whose sha256 or
-- legacy key matches, whichever of the two was ingested first. Scoring rule
-- (specs/catchbench.md): the step at ranking position r (0-based) gets n - r, the top pick
-- gets n + 1, unranked steps get 0; ties are broken towards the earlier step by `rank`.
WITH resolved AS (
    SELECT k.set_id, r.corpus, r.run_id, s.step_idx,
           NULL::VARCHAR AS config_id, NULL::VARCHAR AS capability,
           CASE
               WHEN k.top IS NOT NULL AND s.step_idx = k.top THEN r.n_steps + 1
               WHEN list_position(k.ranking, s.step_idx) IS NOT NULL
                   THEN r.n_steps - (list_position(k.ranking, s.step_idx) - 1)
               ELSE 0
           END::DOUBLE AS score,
           NULL::TINYINT AS pred_label,
           'all' AS split
    FROM rankings k
    JOIN runs r ON k.run_key = r.run_key OR k.run_key = r.legacy_key
    JOIN steps s ON s.run_id = r.run_id
),
unioned AS (
    SELECT set_id, corpus, run_id, step_idx, config_id, capability, score, pred_label, split
    FROM predictions_stored
    UNION ALL
    SELECT * FROM resolved
)
SELECT *,
       CASE WHEN step_idx IS NOT NULL THEN
           row_number() OVER (PARTITION BY set_id, run_id, (step_idx IS NOT NULL)
                              ORDER BY score DESC NULLS LAST, step_idx)
       END AS rank
FROM unioned
