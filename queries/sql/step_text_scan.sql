-- The text scan over the steps of the slice, one page of the steps whose input or output
-- contains the phrase: the Explorer's search, and the search page's fallback while the search
-- index of this store version is not there. $regex is the phrase as a literal case-insensitive
-- RE2 pattern (auditatlas.search.answer.phrase_regex: '(?i)\Q…\E'; a regex literal scans about
-- four times faster than ILIKE … ESCAPE, which DuckDB cannot turn into its fast substring
-- search). Filters: the actions in $actions (none: every action), $field ('both', 'input',
-- 'output'), $label ('any', 'anomaly', 'normal', 'unlabeled'). Results come in trace order
-- (run, step); the snippet is cut around the first match in the field searched. `total` counts
-- every match of the slice; `difficulty` (the run's, copied onto its steps) is for the run's label.
WITH @slice,
matched AS (
    SELECT run_id, step_idx, corpus, backbone, action, agent, label, difficulty, text_in, text_out
    FROM sliced_steps
    WHERE (len($actions) = 0 OR list_contains($actions, action))
      AND ($label = 'any' OR ($label = 'anomaly' AND label = 1) OR ($label = 'normal' AND label = 0)
           OR ($label = 'unlabeled' AND label IS NULL))
      AND (($field IN ('both', 'input') AND regexp_matches(text_in, $regex))
           OR ($field IN ('both', 'output') AND regexp_matches(text_out, $regex)))
),
page AS (
    SELECT *, count(*) OVER () AS total
    FROM matched
    ORDER BY run_id, step_idx
    LIMIT $limit OFFSET $offset
),
located AS (
    SELECT *,
           $field IN ('both', 'input') AND coalesce(regexp_matches(text_in, $regex), false) AS in_input
    FROM page
),
hit AS (
    SELECT *, CASE WHEN in_input THEN text_in ELSE text_out END AS hit_text FROM located
)
SELECT run_id AS run, step_idx AS step, corpus, backbone, action, agent,
       CASE label WHEN 1 THEN 'anomaly' WHEN 0 THEN 'normal' ELSE 'unlabeled' END AS label,
       CASE WHEN in_input THEN 'input' ELSE 'output' END AS found_in,
       substr(hit_text, greatest(instr(lower(hit_text), lower($phrase)) - $context, 1),
              length($phrase) + 2 * $context) AS snippet,
       instr(lower(hit_text), lower($phrase)) > $context + 1 AS cut_before,
       difficulty, total
FROM hit
ORDER BY run_id, step_idx
