-- Run-level structural counts of each run's prefix, for POST detection (fraction 1) and the
-- LIVE board (fractions 0.25 .. 1). Definitions follow auditable's GRADE layers
-- (auditable.graph.features); auditatlas/features.py documents them and derives the shares.
--
-- Population: runs of the slice with a known outcome (success / failure) and at least
-- $min_steps steps whose run id is in [$run_from, $run_to) (NULL: unbounded; the boards read the
-- population in batches of runs, run_prefix_batches.sql, so that memory is one batch's). Prefix:
-- the first k = ceil($fraction * n_steps) steps, at least 1; the
-- product is rounded to 6 decimals first so that 0.7 * 10 is 7, not 8. Keep this block in step
-- with run_prefix_predictions.sql.
--
-- Dependency edges are de-duplicated (src, dst) pairs (two edge kinds between the same steps
-- are one dependency); an edge belongs to the prefix when its later end does (src < dst always).
-- The prefix edges come back as two aligned lists so Python can compute the chain depth
-- without a second query.
WITH @slice,
-- Materialized: its three readers would otherwise each inline it, and DuckDB would then
-- materialize sliced_runs instead, reading every run of the store before the batch's range
-- (a fifth of a batch's time at a million rooms); read once here, the range prunes the scan.
population AS MATERIALIZED (
    SELECT r.run_id, r.outcome, r.n_steps AS run_steps,
           least(r.n_steps, greatest(1, ceil(round($fraction * r.n_steps, 6))))::BIGINT AS k
    FROM sliced_runs r
    WHERE @known_outcome AND r.n_steps >= greatest($min_steps, 1)
      AND ($run_from IS NULL OR r.run_id >= $run_from) AND ($run_to IS NULL OR r.run_id < $run_to)
),
prefix_steps AS (
    -- A missing agent is one anonymous agent; a missing tool flag counts as a decision.
    SELECT s.run_id, s.step_idx, coalesce(s.agent, '') AS agent, coalesce(s.is_tool, false) AS is_tool
    FROM steps s JOIN population p USING (run_id)
    WHERE s.step_idx < p.k
      AND ($run_from IS NULL OR s.run_id >= $run_from) AND ($run_to IS NULL OR s.run_id < $run_to)
),
size AS (
    SELECT run_id, count(*) AS n_steps,
           count(*) FILTER (WHERE is_tool) AS n_tool_calls,
           count(*) FILTER (WHERE NOT is_tool) AS n_decisions
    FROM prefix_steps GROUP BY run_id
),
agent_counts AS (
    SELECT run_id, agent, count(*) AS c FROM prefix_steps GROUP BY run_id, agent
),
agents AS (
    -- Gini of the steps per agent from the sorted counts: sum_i (2i - m - 1) c_(i) / (m * total)
    -- equals the pairwise form sum_a sum_b |c_a - c_b| / (2 m total); 0 with a single agent.
    SELECT run_id, count(*) AS n_agents, max(c) AS max_agent_outdeg,
           CASE WHEN count(*) <= 1 THEN 0.0
                ELSE sum((2 * i - m - 1) * c) / (m * sum(c)) END AS agent_gini
    FROM (SELECT run_id, c,
                 row_number() OVER (PARTITION BY run_id ORDER BY c) AS i,
                 count(*) OVER (PARTITION BY run_id) AS m
          FROM agent_counts)
    GROUP BY run_id, m
),
handoffs AS (
    -- A change is a step whose agent differs from the previous step's; a return is a change
    -- into an agent that already acted earlier in the prefix.
    SELECT run_id,
           count(*) FILTER (WHERE changed) AS changes,
           count(*) FILTER (WHERE changed AND seen_before) AS returns,
           count(DISTINCT [prev_agent, agent]) FILTER (WHERE changed) AS n_agent_transitions
    FROM (SELECT run_id, agent,
                 lag(agent) OVER (PARTITION BY run_id ORDER BY step_idx) AS prev_agent,
                 coalesce(lag(agent) OVER (PARTITION BY run_id ORDER BY step_idx) <> agent, false) AS changed,
                 row_number() OVER (PARTITION BY run_id, agent ORDER BY step_idx) > 1 AS seen_before
          FROM prefix_steps)
    GROUP BY run_id
),
prefix_edges AS (
    SELECT DISTINCT e.run_id, e.src_idx, e.dst_idx
    FROM edges e JOIN population p USING (run_id)
    WHERE e.dst_idx < p.k
      AND ($run_from IS NULL OR e.run_id >= $run_from) AND ($run_to IS NULL OR e.run_id < $run_to)
),
blast AS (
    -- How many later prefix steps rest directly on one step (its dependents).
    SELECT run_id, max(d) AS max_blast_indeg
    FROM (SELECT run_id, count(*) AS d FROM prefix_edges GROUP BY run_id, src_idx)
    GROUP BY run_id
),
audit AS (
    -- How many earlier steps one step rests on directly, and its span: how far back its
    -- earliest dependency reaches (dst - earliest src).
    SELECT run_id, max(d) AS max_audit_outdeg, max(span) AS max_span, sum(span) AS sum_span
    FROM (SELECT run_id, dst_idx, count(*) AS d, dst_idx - min(src_idx) AS span
          FROM prefix_edges GROUP BY run_id, dst_idx)
    GROUP BY run_id
),
dep AS (
    SELECT run_id, count(*) AS n_dep_edges,
           list(src_idx ORDER BY dst_idx, src_idx) AS dep_src,
           list(dst_idx ORDER BY dst_idx, src_idx) AS dep_dst
    FROM prefix_edges GROUP BY run_id
)
SELECT p.run_id,
       p.outcome,
       p.run_steps,
       p.k AS prefix_steps,
       s.n_steps,
       s.n_tool_calls,
       s.n_decisions,
       a.n_agents,
       a.max_agent_outdeg,
       a.agent_gini::DOUBLE AS agent_gini,
       h.n_agent_transitions,
       CASE WHEN h.changes > 0 THEN h.returns / h.changes ELSE 0.0 END AS agent_recurrence,
       coalesce(d.n_dep_edges, 0) AS n_dep_edges,
       coalesce(b.max_blast_indeg, 0) AS max_blast_indeg,
       coalesce(u.max_audit_outdeg, 0) AS max_audit_outdeg,
       coalesce(u.max_span, 0) AS max_span,
       coalesce(u.sum_span, 0) / s.n_steps AS mean_span,
       coalesce(d.dep_src, []::BIGINT[]) AS dep_src,
       coalesce(d.dep_dst, []::BIGINT[]) AS dep_dst
FROM population p
JOIN size s USING (run_id)
JOIN agents a USING (run_id)
JOIN handoffs h USING (run_id)
LEFT JOIN dep d USING (run_id)
LEFT JOIN blast b USING (run_id)
LEFT JOIN audit u USING (run_id)
ORDER BY p.run_id
