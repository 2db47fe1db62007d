-- Config-level prediction sets of one corpus: the capabilities each set flags (pred_label 1)
-- per config it scored. A config with rows but nothing flagged is scored, not abstained; a
-- config without rows is an abstention.
SELECT ps.set_id, ps.method, ps.model, p.config_id,
       list(p.capability ORDER BY p.capability) FILTER (WHERE p.pred_label = 1) AS flagged
FROM prediction_sets ps JOIN predictions p USING (set_id)
WHERE ps.corpus = $corpus AND ps.granularity = 'config'
GROUP BY ALL
ORDER BY ps.set_id, p.config_id
