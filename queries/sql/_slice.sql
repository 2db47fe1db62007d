-- The shared slice: every parameter is a list; an empty list means "all".
-- sliced_runs filters runs; sliced_steps filters steps on the run keys the store writer copied
-- onto every step, so step aggregates scan one table (no join to runs).
sliced_runs AS (
    SELECT * FROM runs r
    WHERE (len($corpus) = 0 OR list_contains($corpus, r.corpus))
      AND (len($backbone) = 0 OR list_contains($backbone, r.backbone))
      AND (len($difficulty) = 0 OR list_contains($difficulty, r.difficulty))
      AND (len($temperature) = 0 OR list_contains($temperature, r.temperature))
      AND (len($domain) = 0 OR list_contains($domain, r.domain))
      AND (len($outcome) = 0 OR list_contains($outcome, r.outcome))
),
sliced_steps AS (
    SELECT * FROM steps s
    WHERE (len($corpus) = 0 OR list_contains($corpus, s.corpus))
      AND (len($backbone) = 0 OR list_contains($backbone, s.backbone))
      AND (len($difficulty) = 0 OR list_contains($difficulty, s.difficulty))
      AND (len($temperature) = 0 OR list_contains($temperature, s.temperature))
      AND (len($domain) = 0 OR list_contains($domain, s.domain))
      AND (len($outcome) = 0 OR list_contains($outcome, s.outcome))
)
