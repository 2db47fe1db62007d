-- How long the chains of the slice are, per backbone (and which action they start from), for
-- the chain browser's distribution and its origin-action filter. A chain is read from its
-- origin step (steps.chain_role and chain_length, written by the store writer).
WITH @slice
SELECT coalesce(backbone, '(none)') AS backbone, coalesce(action, '(none)') AS origin_action,
       chain_length AS length, count(*) AS chains
FROM sliced_steps
WHERE chain_role = 'origin'
GROUP BY ALL
ORDER BY backbone, origin_action, length
