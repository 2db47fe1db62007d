-- PRE configurations of one corpus (CatchBench), in id order.
SELECT config_id, config_source, label_process, spec_tokens, extra
FROM configs WHERE corpus = $corpus ORDER BY config_id
