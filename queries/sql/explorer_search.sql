-- Text search over the steps of the slice: one page of steps whose input or output contains
-- the phrase (case-insensitive; $regex is the phrase as a literal RE2 pattern, built by
-- components.explorer_lists.phrase_regex: '(?i)\Q…\E'. A regex literal scans about four times
-- faster than ILIKE … ESCAPE, which DuckDB cannot turn into its fast substring search),
-- optionally only of the actions in $actions and only in $field ('both', 'input', 'output').
-- Results come in trace order (run, step); the snippet is cut around the first match.
-- `total` counts every match of the slice; `difficulty` (the run's, copied onto its steps) is
-- for the run's label.
WITH @slice,
matched AS (
    SELECT run_id, step_idx, action, agent, difficulty, text_in, text_out
    FROM sliced_steps
    WHERE (len($actions) = 0 OR list_contains($actions, action))
      AND (($field IN ('both', 'input') AND regexp_matches(text_in, $regex))
           OR ($field IN ('both', 'output') AND regexp_matches(text_out, $regex)))
),
page AS (
    SELECT *, count(*) OVER () AS total
    FROM matched
    ORDER BY run_id, step_idx
    LIMIT $limit OFFSET $offset
),
flagged AS (
    SELECT *, coalesce(regexp_matches(text_in, $regex), false) AS in_input
    FROM page
),
located AS (
    SELECT *,
           CASE WHEN in_input AND $field IN ('both', 'input') THEN text_in ELSE text_out END AS hit_text
    FROM flagged
)
SELECT run_id AS run, step_idx AS step, action, agent,
       CASE WHEN in_input AND $field IN ('both', 'input') THEN 'input' ELSE 'output' END AS found_in,
       substr(hit_text, greatest(instr(lower(hit_text), lower($phrase)) - $context, 1),
              length($phrase) + 2 * $context) AS snippet,
       instr(lower(hit_text), lower($phrase)) > $context + 1 AS cut_before,
       difficulty, total
FROM located
ORDER BY run_id, step_idx
