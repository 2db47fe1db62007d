-- The corpora each Parquet part of the runs table holds, for the parts in $parts (file paths
-- taken from the store manifest, bound as a list, never formatted in). The runs view does not
-- say which store source a run came from, so a re-score's provenance (which store sources its
-- features were read from: params.data_sources) reads the parts themselves, corpus column only.
SELECT DISTINCT filename AS part, corpus
FROM read_parquet($parts, filename = true)
ORDER BY part, corpus
