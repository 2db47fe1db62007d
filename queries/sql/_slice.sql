-- The shared slice: every parameter is a list; an empty list means "all".
sliced_runs AS (
    SELECT * FROM runs r
    WHERE (len($corpus) = 0 OR list_contains($corpus, r.corpus))
      AND (len($backbone) = 0 OR list_contains($backbone, r.backbone))
      AND (len($difficulty) = 0 OR list_contains($difficulty, r.difficulty))
      AND (len($temperature) = 0 OR list_contains($temperature, r.temperature))
      AND (len($domain) = 0 OR list_contains($domain, r.domain))
      AND (len($outcome) = 0 OR list_contains($outcome, r.outcome))
)
