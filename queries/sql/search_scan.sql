-- The search page's fallback while the search index of this store version is not there: the
-- Explorer's text scan (explorer_search.sql: $regex is the text as a literal case-insensitive
-- RE2 pattern, auditatlas.search.answer.phrase_regex) over input and output, restricted to the
-- slice and to $label ('any', 'anomaly', 'normal', 'unlabeled'), in trace order, one page.
WITH @slice,
matched AS (
    SELECT run_id, step_idx, corpus, backbone, action, agent, label, text_in, text_out
    FROM sliced_steps
    WHERE ($label = 'any' OR ($label = 'anomaly' AND label = 1) OR ($label = 'normal' AND label = 0)
           OR ($label = 'unlabeled' AND label IS NULL))
      AND (regexp_matches(text_in, $regex) OR regexp_matches(text_out, $regex))
),
page AS (
    SELECT *, count(*) OVER () AS total
    FROM matched
    ORDER BY run_id, step_idx
    LIMIT $limit OFFSET $offset
),
located AS (
    SELECT *, coalesce(regexp_matches(text_in, $regex), false) AS in_input
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
       total
FROM hit
ORDER BY run_id, step_idx
