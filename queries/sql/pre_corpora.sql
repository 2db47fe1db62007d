-- Corpora holding PRE configurations.
SELECT DISTINCT corpus FROM configs ORDER BY corpus
