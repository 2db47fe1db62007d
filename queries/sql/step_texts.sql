-- Step text of the runs at positions [$lo, $hi) of step_feature_runs.sql, for the hashed
-- n-gram text features (read in chunks of runs so no call holds a whole corpus's text);
-- $run_from and $run_to as in step_features.sql.
WITH @slice,
run_keys AS (
    SELECT run_id,
           (@first_run_pos + row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos
    FROM sliced_runs
    WHERE @in_run_range
)
SELECT k.run_pos, s.step_idx, coalesce(s.text_in, '') AS text_in, coalesce(s.text_out, '') AS text_out
FROM (SELECT * FROM steps WHERE @in_run_range) s JOIN run_keys k ON s.run_id = k.run_id
WHERE k.run_pos >= $lo AND k.run_pos < $hi
ORDER BY k.run_pos, s.step_idx
