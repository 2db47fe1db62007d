-- Per prediction set: its predictions, its test predictions (split 'test', or 'all' for sets
-- without a split) and those without a score. Kept on disk per store version
-- (queries/derived.py): listing a corpus's sets then reads a few rows, not every prediction.
SELECT set_id, corpus,
       count(*) AS n_predictions,
       count(*) FILTER (WHERE split IN ('test', 'all')) AS n_test_predictions,
       count(*) FILTER (WHERE split IN ('test', 'all') AND (score IS NULL OR isnan(score))) AS n_test_unscored
FROM predictions
GROUP BY set_id, corpus
