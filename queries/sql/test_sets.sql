-- Per (prediction set, corpus, backbone): the scored, labeled test steps (test_scores), their
-- anomalies, the steps the set decided itself (pred_label), and the runs they come from. A run
-- has one backbone, so runs add up over backbones. Kept on disk per store version
-- (queries/derived.py) so the views need not count distinct runs over every test step.
SELECT set_id, corpus, backbone,
       count(*) AS n_steps,
       count(*) FILTER (WHERE label = 1) AS n_pos,
       count(pred_label) AS n_decided,
       count(DISTINCT run_id) AS n_runs
FROM test_scores
GROUP BY ALL
