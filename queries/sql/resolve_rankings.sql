-- Released rankings (a judge's top pick plus its ranking of a run's steps, keyed by CatchBench
-- run key) as one score per step of each run whose sha256 or legacy key matches, whichever of
-- the two was ingested first. Materialised once per store version (queries/__init__.py).
-- Scoring rule (specs/catchbench.md): the step at ranking position r (0-based) gets n - r,
-- the top pick gets n + 1, unranked steps get 0; `rank` breaks ties towards the earlier step.
-- Two equality joins (sha256 key, legacy key) instead of one OR join, which DuckDB can only
-- run as a nested loop.
WITH matched AS (
    SELECT k.set_id, k.top, k.ranking, r.run_id, r.corpus, r.n_steps
    FROM rankings k JOIN runs r ON k.run_key = r.run_key
    UNION ALL
    SELECT k.set_id, k.top, k.ranking, r.run_id, r.corpus, r.n_steps
    FROM rankings k JOIN runs r ON k.run_key = r.legacy_key
    WHERE r.run_key IS DISTINCT FROM k.run_key
),
scored AS (
    SELECT m.set_id, m.corpus, m.run_id, s.step_idx,
           NULL::VARCHAR AS config_id, NULL::VARCHAR AS capability,
           CASE
               WHEN m.top IS NOT NULL AND s.step_idx = m.top THEN m.n_steps + 1
               WHEN list_position(m.ranking, s.step_idx) IS NOT NULL
                   THEN m.n_steps - (list_position(m.ranking, s.step_idx) - 1)
               ELSE 0
           END::DOUBLE AS score,
           NULL::TINYINT AS pred_label,
           'all' AS split
    FROM matched m JOIN steps s ON s.run_id = m.run_id
)
SELECT *,
       row_number() OVER (PARTITION BY set_id, run_id ORDER BY score DESC NULLS LAST, step_idx) AS rank
FROM scored
