-- The names runs carry in their extra (a trace of your own: its root span's name and start time,
-- written by the OTLP adapter), for the run ids of one list page: the labels a list shows.
SELECT run_id, json_extract_string(extra, '$.run_name') AS run_name
FROM runs
WHERE run_id IN @each($run_ids) AND json_extract_string(extra, '$.run_name') IS NOT NULL
