-- The live grid's run sums (grid_cells.sql, grid_means.sql): one row per run of a cell
-- (set_key, backbone_key, action_key: positions in $set_ids, $backbones, $actions), with that
-- run's positives m and negatives n there and the sums rp / rq of their place2 (grid_cells.sql
-- says what place2 is). Written after the slice CTEs, before grid_auc_sums; no trailing comma.
scored AS (
    SELECT list_position($set_ids, t.set_id::VARCHAR) AS set_key,
           coalesce(list_position($backbones,
               CASE WHEN $by_backbone THEN coalesce(t.backbone::VARCHAR, '(none)') ELSE '(all backbones)' END), 0) AS backbone_key,
           coalesce(list_position($actions,
               CASE WHEN $by_action THEN coalesce(t.action::VARCHAR, '(none)') ELSE '(all actions)' END), 0) AS action_key,
           t.run_id::VARCHAR AS run_id, t.label, t.score
    @scored_test_steps
),
placed AS (
    SELECT set_key, backbone_key, action_key, run_id, label,
           (rank() OVER cell + count(*) OVER cell) - (rank() OVER own + count(*) OVER own) AS place2
    FROM scored
    WINDOW cell AS (PARTITION BY set_key, backbone_key, action_key ORDER BY score),
           own AS (PARTITION BY set_key, backbone_key, action_key, label ORDER BY score)
),
run_sums AS (
    SELECT set_key, backbone_key, action_key, run_id,
           count(*) FILTER (WHERE label = 1) AS m,
           count(*) FILTER (WHERE label = 0) AS n,
           coalesce(sum(place2) FILTER (WHERE label = 1), 0) AS rp,
           coalesce(sum(place2) FILTER (WHERE label = 0), 0) AS rq
    FROM placed
    GROUP BY ALL
)
