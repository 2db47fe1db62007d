-- propagation_possible.sql as stored once per store version (the derived table
-- possible_pairs, queries/derived.py): the pairs are the whole store's, whatever the slice.
SELECT src_action, later_action
FROM possible_pairs
ORDER BY src_action, later_action
