-- The ranked twin's run sums (grid_cells_ranked.sql, grid_means_ranked.sql): the columns of
-- _grid_run_sums.sql read from the stored per-run columns of test_scores, one row per step,
-- a run's sums on its first row in each group and zeros on the others (grid_cells_ranked.sql
-- says how). The keys are the set id and the backbone and action names. No trailing comma.
-- MATERIALIZED: grid_means reads it twice (the cells' sums and each run's influence); inlined,
-- each read projected every stored test row again (0.34 s against 0.28 s at 100,000 rooms).
run_sums AS MATERIALIZED (
    SELECT t.set_id::VARCHAR AS set_key,
           CASE WHEN $by_backbone THEN coalesce(t.backbone::VARCHAR, '(none)') ELSE '(all backbones)' END AS backbone_key,
           CASE WHEN $by_action THEN coalesce(t.action::VARCHAR, '(none)') ELSE '(all actions)' END AS action_key,
           t.run_id::VARCHAR AS run_id,
           CASE WHEN $by_backbone AND $by_action THEN t.cell_run_m WHEN $by_backbone THEN t.backbone_run_m
                WHEN $by_action THEN t.action_run_m ELSE t.set_run_m END AS m,
           CASE WHEN $by_backbone AND $by_action THEN t.cell_run_n WHEN $by_backbone THEN t.backbone_run_n
                WHEN $by_action THEN t.action_run_n ELSE t.set_run_n END AS n,
           CASE WHEN $by_backbone AND $by_action THEN t.cell_run_rp WHEN $by_backbone THEN t.backbone_run_rp
                WHEN $by_action THEN t.action_run_rp ELSE t.set_run_rp END AS rp,
           CASE WHEN $by_backbone AND $by_action THEN t.cell_run_rq WHEN $by_backbone THEN t.backbone_run_rq
                WHEN $by_action THEN t.action_run_rq ELSE t.set_run_rq END AS rq
    @scored_test_steps
)
