-- Corpora whose runs carry both outcomes (run-level detection needs failures and successes).
SELECT corpus
FROM runs
WHERE @known_outcome
GROUP BY corpus
HAVING count(DISTINCT outcome) = 2 AND min(n_steps) >= 0
ORDER BY corpus
