-- Blocks of the published (golden) board: one row per (board, corpus) with its cell count.
SELECT board, corpus, count(*) AS cells
FROM published_values GROUP BY ALL ORDER BY board, corpus
