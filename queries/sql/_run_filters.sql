-- The run list's filters on run columns (explorer_runs*.sql), over `sliced_runs r`.
($run_q = '' OR r.run_id ILIKE $run_pattern ESCAPE '\')
AND (len($f_corpus) = 0 OR list_contains($f_corpus, r.corpus))
AND (len($f_backbone) = 0 OR list_contains($f_backbone, r.backbone))
AND (len($f_difficulty) = 0 OR list_contains($f_difficulty, r.difficulty))
AND (len($f_outcome) = 0 OR list_contains($f_outcome, r.outcome))
AND ($min_steps IS NULL OR r.n_steps >= $min_steps)
AND ($max_steps IS NULL OR r.n_steps <= $max_steps)
