-- The per-step feature columns of the detectors' step features (step_features.sql) that need
-- only the step (alias s) and its run's length (k.n_steps): shared with the step vectors of
-- the patterns (pattern_steps.sql), so both describe a step by the same numbers.
       s.step_idx::DOUBLE AS step_index,
       (s.step_idx / greatest(k.n_steps - 1, 1))::DOUBLE AS position_frac,
       k.n_steps::DOUBLE AS run_steps,
       ln(1 + greatest(coalesce(s.tokens_in, 0), 0))::DOUBLE AS log_tokens_in,
       ln(1 + greatest(coalesce(s.tokens_out, 0), 0))::DOUBLE AS log_tokens_out,
       (s.tokens_in IS NOT NULL OR s.tokens_out IS NOT NULL)::DOUBLE AS has_tokens,
       ln(1 + greatest(coalesce(s.duration_s, 0), 0))::DOUBLE AS log_duration,
       (s.duration_s IS NOT NULL)::DOUBLE AS has_duration,
       coalesce(s.confidence, 0)::DOUBLE AS confidence,
       (s.confidence IS NOT NULL)::DOUBLE AS has_confidence,
       coalesce(s.is_tool, false)::DOUBLE AS is_tool
