-- Published values of one board (CatchBench golden board), as parsed at ingest.
SELECT board, corpus, entrant, metric, value
FROM published_values
WHERE board = $board AND ($corpus IS NULL OR corpus = $corpus)
ORDER BY corpus, entrant, metric
