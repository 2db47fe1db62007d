-- One prediction set by id (to tell a link's unknown set from one that does not score the run).
SELECT set_id, corpus, method, granularity, protocol, model
FROM prediction_sets
WHERE set_id = $set
