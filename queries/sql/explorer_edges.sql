-- The dependency edges of one run.
SELECT src_idx, dst_idx, kind, provenance
FROM edges
WHERE run_id = $run
ORDER BY dst_idx, src_idx, kind
