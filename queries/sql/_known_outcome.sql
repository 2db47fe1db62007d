-- The run has a known outcome: 'unknown' runs (no verdict in the release) are left out of
-- every rate, population and count "with outcome".
outcome IN ('success', 'failure')
