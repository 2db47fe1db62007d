-- MAST failure modes of the slice's failed steps per backbone (the cascade code shows as
-- FM-5), with the cascade flag (an earlier step of the same scope had already failed) and the
-- verifier error code. failure_mode, is_cascade and error_code stay NULL where the corpus
-- does not record them.
WITH @slice
SELECT coalesce(backbone, '(none)') AS backbone,
       failure_mode,
       is_cascade,
       error_code,
       count(*) AS failed_steps
FROM sliced_steps
WHERE label = 1
GROUP BY ALL
ORDER BY backbone, failure_mode, is_cascade, error_code
