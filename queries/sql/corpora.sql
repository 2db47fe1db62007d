-- What is loaded: one row per corpus with its kind (real or simulated) and label process.
SELECT c.corpus, c.title, c.kind, c.label_process, c.description
FROM corpora c
ORDER BY c.kind, c.corpus
