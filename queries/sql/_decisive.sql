-- Whether step ``s`` is a labeled decisive step: Who&When's human decisive step, or a step your
-- own labels call decisive (``decisive`` of a labels file row, kept in extra.label_file, or of a
-- span's annotation.* attributes, kept in extra.annotation; ingest/labels.py, ingest/otlp.py).
-- The CASE reads extra only for those two label sources, so other corpora never parse JSON here.
(s.label = 1 AND CASE
    WHEN s.label_source = 'human_decisive_step' THEN true
    WHEN s.label_source = 'labels_file' THEN coalesce(json_extract(s.extra, '$.label_file.decisive')::BOOLEAN, false)
    WHEN s.label_source = 'span_annotation' THEN coalesce(json_extract(s.extra, '$.annotation.decisive')::BOOLEAN, false)
    ELSE false END)
