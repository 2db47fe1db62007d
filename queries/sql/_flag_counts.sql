-- The confusion counts of detector_overall.sql and detector_overall_ranked.sql, over rows
-- with ``label``, ``flag`` (the set's decision) and ``scope_success``: true/false positives
-- and negatives, and recall's parts on silent anomalies (label 1, scope still succeeded) and
-- loud ones (scope failed).
           count(*) FILTER (WHERE label = 1 AND flag) AS tp,
           count(*) FILTER (WHERE label = 0 AND flag) AS fp,
           count(*) FILTER (WHERE label = 0 AND NOT flag) AS tn,
           count(*) FILTER (WHERE label = 1 AND NOT flag) AS fn,
           count(*) FILTER (WHERE label = 1 AND scope_success) AS silent_pos,
           count(*) FILTER (WHERE label = 1 AND scope_success AND flag) AS silent_tp,
           count(*) FILTER (WHERE label = 1 AND NOT scope_success) AS loud_pos,
           count(*) FILTER (WHERE label = 1 AND NOT scope_success AND flag) AS loud_tp,
           count(*) FILTER (WHERE label = 1 AND scope_success IS NULL) AS unknown_scope_pos
