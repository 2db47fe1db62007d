-- The re-scored prediction sets (source 'rescore') of the chosen corpora ($corpora: empty = all),
-- what rescore_sets.sql and its twin list (rescore_sets_ranked.sql).
sets AS (
    SELECT * FROM prediction_sets
    WHERE origin = 'rescore' AND (len($corpora) = 0 OR list_contains($corpora, corpus))
)
