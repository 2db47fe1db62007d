-- Numeric features of every step of the slice, one row per step, keyed by (run_pos, step_idx)
-- (run_pos as in step_feature_runs.sql). Unordered: sorting a million rows here costs as much
-- as the rest of the query, numpy's lexsort on the two integer keys a tenth of a second.
-- Computed here, over the store, so the engine pulls numbers only:
--   position: step_idx, its fraction of the run (0 first .. 1 last), the run's length;
--   cost: log(1 + tokens in / out), log(1 + duration seconds), self-reported confidence, each
--         0 where missing with a has_* flag (a missing value is not a small value);
--   dependencies (edges, de-duplicated by (src, dst)): in-degree (earlier steps this one read),
--         out-degree (later steps reading it), the longest and mean reach back (dst - src) of
--         its in-edges, the longest reach forward of its out-edges;
--   action_code / agent_code: 1-based position in $actions / $agents (step_feature_vocab.sql),
--         0 for a null or unknown value; the engine one-hot encodes them.
-- label stays null where the step is unlabeled: the engine never trains on a missing label.
-- Only the runs at positions [$lo, $hi) when they are set (NULL: every run): label doubt and the
-- detector engine read a large corpus a chunk of runs at a time. $run_from and $run_to are the
-- chunk's first and last run id (step_feature_chunks.sql; NULL: not known): the scans of steps
-- and edges are then bounded by them (a tenth of the time at a million rooms), and the runs
-- within them numbered from $lo (from 0 over every run of the slice when they are NULL).
WITH @slice,
run_keys AS (
    SELECT * FROM (SELECT run_id, n_steps,
                          (@first_run_pos + row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_pos
                   FROM sliced_runs WHERE @in_run_range)
    WHERE ($lo IS NULL OR run_pos >= $lo) AND ($hi IS NULL OR run_pos < $hi)
),
dep AS (
    SELECT DISTINCT e.run_id, e.src_idx, e.dst_idx
    FROM (SELECT * FROM edges WHERE @in_run_range) e SEMI JOIN run_keys k ON e.run_id = k.run_id
),
dep_in AS (
    SELECT run_id, dst_idx AS step_idx, count(*) AS dep_in,
           max(dst_idx - src_idx) AS span_in_max, avg(dst_idx - src_idx) AS span_in_mean
    FROM dep GROUP BY run_id, dst_idx
),
dep_out AS (
    SELECT run_id, src_idx AS step_idx, count(*) AS dep_out, max(dst_idx - src_idx) AS span_out_max
    FROM dep GROUP BY run_id, src_idx
)
SELECT k.run_pos,
       s.step_idx,
       s.label::DOUBLE AS label,
       coalesce(list_position($actions, s.action), 0)::INTEGER AS action_code,
       coalesce(list_position($agents, s.agent), 0)::INTEGER AS agent_code,
       @step_feature_values,
       coalesce(i.dep_in, 0)::DOUBLE AS dep_in,
       coalesce(o.dep_out, 0)::DOUBLE AS dep_out,
       coalesce(i.span_in_max, 0)::DOUBLE AS span_in_max,
       coalesce(i.span_in_mean, 0)::DOUBLE AS span_in_mean,
       coalesce(o.span_out_max, 0)::DOUBLE AS span_out_max
FROM (SELECT * FROM steps WHERE @in_run_range) s
JOIN run_keys k ON s.run_id = k.run_id
LEFT JOIN dep_in i ON i.run_id = s.run_id AND i.step_idx = s.step_idx
LEFT JOIN dep_out o ON o.run_id = s.run_id AND o.step_idx = s.step_idx
