-- Judges against the human: runs of the slice whose decisive step a human labelled (Who&When:
-- label source $decisive_source) where most LLM judges with a pick on the run (step-level
-- prediction sets of family 'llm' on the run's corpus) picked another step. A judge's pick is
-- the step it ranks first: its released top, else the first step of its released ranking, else
-- its rank-1 prediction (the Explorer's judges' strip, auditatlas/figures/judges.py). A judge
-- that abstained (a released ranking with no top and no step) picks nothing and is counted apart.
-- The queue's step is the human decisive step (the label in question). `other_pick`: the step
-- most judges picked instead (ties: the earlier step), `other_votes` how many did.
-- Most doubtful first: the share of judges against the human, then the judges agreeing on one
-- other step, then run.
WITH @slice,
decisive AS (
    SELECT s.corpus, s.run_id, s.step_idx, s.label
    FROM sliced_steps s
    WHERE s.label_source = $decisive_source AND s.label = 1
),
judge_sets AS (
    SELECT set_id, corpus FROM prediction_sets WHERE granularity = 'step' AND family = 'llm'
),
keyed AS (
    SELECT r.run_id, r.corpus, r.run_key, r.legacy_key FROM runs r JOIN decisive d USING (run_id)
),
-- Two equality joins (sha256 key, legacy key), as queries/sql/resolve_rankings.sql matches them.
abstained AS (
    SELECT DISTINCT a.set_id, a.run_id FROM (
        SELECT k.set_id, r.run_id, r.corpus, k.top, k.ranking FROM rankings k JOIN keyed r ON k.run_key = r.run_key
        UNION ALL
        SELECT k.set_id, r.run_id, r.corpus, k.top, k.ranking FROM rankings k JOIN keyed r ON k.run_key = r.legacy_key
        WHERE r.run_key IS DISTINCT FROM k.run_key
    ) a JOIN judge_sets j ON j.set_id = a.set_id AND j.corpus = a.corpus
    WHERE a.top IS NULL AND coalesce(len(a.ranking), 0) = 0
),
picks AS (
    SELECT p.set_id, d.corpus, d.run_id, d.step_idx AS decisive, d.label, p.step_idx AS pick
    FROM predictions p
    JOIN decisive d ON d.run_id = p.run_id
    JOIN judge_sets j ON j.set_id = p.set_id AND j.corpus = d.corpus
    WHERE p.rank = 1 AND p.step_idx IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM abstained a WHERE a.set_id = p.set_id AND a.run_id = p.run_id)
),
per_run AS (
    SELECT corpus, run_id, decisive AS step_idx, label, count(*) AS n_judges,
           count(*) FILTER (WHERE pick <> decisive) AS n_against
    FROM picks
    GROUP BY corpus, run_id, decisive, label
),
other AS (
    SELECT run_id, pick, count(*) AS votes,
           row_number() OVER (PARTITION BY run_id ORDER BY count(*) DESC, pick) AS place
    FROM picks
    WHERE pick <> decisive
    GROUP BY run_id, pick
),
abstentions AS (
    SELECT run_id, count(*) AS n_abstained FROM abstained GROUP BY run_id
)
SELECT p.corpus, p.run_id, p.step_idx, p.label, p.n_judges, p.n_against,
       p.n_against / p.n_judges AS share, o.pick AS other_pick, o.votes AS other_votes,
       coalesce(a.n_abstained, 0) AS n_abstained
FROM per_run p
LEFT JOIN other o ON o.run_id = p.run_id AND o.place = 1
LEFT JOIN abstentions a ON a.run_id = p.run_id
WHERE 2 * p.n_against > p.n_judges
ORDER BY share DESC, other_votes DESC, p.run_id
