"""The adapter toolkit: what every release format needs and no format should write again.

- :mod:`.jsonfiles`: finding release JSON files and reading any JSON, JSONL or gzip input
  (gzip inflated in a stream under a size limit, :mod:`.compressed`; orjson fast path, ``json``
  as the reference), every reading problem one sentence naming the file;
- :mod:`.csvfiles`: the one CSV reader, every problem one sentence naming file, line and column;
- :mod:`.fields`: field checks and typed getters whose problems name file and field;
- :mod:`.rows`: Arrow row buffers for adapters that convert many runs in chunks;
- :mod:`.documents`: the skeleton of a format of one JSON object per run file (find, chunk,
  convert run by run, all or nothing per run).

An adapter keeps only its conversion rules; what it reads and how it words a bad field in its
own terms stays in its module.
"""
from __future__ import annotations

from .fields import (
                     MAX_INT64,
                     count_at,
                     count_field,
                     first_line,
                     is_count,
                     is_int,
                     json_type,
                     number_at,
                     number_field,
                     object_at,
                     object_field,
                     show,
                     string_field,
)
from .jsonfiles import (
                     MAX_DEPTH,
                     as_text,
                     check_value,
                     compact,
                     decode_text,
                     finite,
                     first_json,
                     has_keys,
                     json_files,
                     json_text,
                     load_json,
                     load_object,
                     loads,
                     parse_documents,
                     parse_json_text,
                     read_raw,
                     readable,
                     text_or_none,
                     walk_json_files,
)
from .rows import RowBuffer, RunBuffers, no_cycle_collection

__all__ = [
    "MAX_DEPTH", "MAX_INT64", "RowBuffer", "RunBuffers", "as_text", "check_value", "compact", "decode_text", "count_at", "count_field",
    "finite", "first_json", "json_text",
    "first_line", "has_keys", "is_count", "is_int", "json_files", "json_type", "load_json", "load_object", "loads",
    "no_cycle_collection", "number_at", "number_field", "object_at", "object_field", "parse_documents", "parse_json_text", "read_raw", "readable", "show", "string_field",
    "text_or_none", "walk_json_files",
]
