"""What the search index holds per step: the fields a query reads, the filters a slice sets,
and a step row turned into an index document.

Searchable (tantivy's default tokenizer: words, lower-cased; positions kept for phrases):
``input`` and ``output`` (the step's text in and out), ``agent``, ``action`` and
``attributes`` (what the adapter kept of the step beyond the schema: ``extra``, plus its
failure mode and error code). A query without a field name reads input, output and
attributes; ``agent:`` and ``action:`` name a field.

Filters (the raw tokenizer: the value as stored, one term): the shared slice's columns and the
step's label, so a hit list is restricted inside the engine, before ranking and paging.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import tantivy

from ..schema import SLICE_COLUMNS

TEXT_FIELDS: dict[str, str] = {  # index field -> the step column it reads
    "input": "text_in", "output": "text_out", "agent": "agent", "action": "action",
}
ATTRIBUTES = "attributes"
SEARCHABLE: tuple[str, ...] = (*TEXT_FIELDS, ATTRIBUTES)
# Where words without a field name are looked for: agent and action are names, asked by name.
DEFAULT_FIELDS: tuple[str, ...] = ("input", "output", ATTRIBUTES)
LABEL = "label"
FILTERS: tuple[str, ...] = (*SLICE_COLUMNS, LABEL)
LABEL_TEXTS = {1: "anomaly", 0: "normal", None: "unlabeled"}
# The step columns a build reads (queries/sql/search_steps.sql returns exactly these).
STEP_COLUMNS: tuple[str, ...] = ("run_id", "step_idx", *SLICE_COLUMNS, *TEXT_FIELDS.values(), "label",
                                 "failure_mode", "error_code", "extra")


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    # Stored: the hit list shows them without reading the store again (the text for snippets).
    for name in TEXT_FIELDS:
        builder.add_text_field(name, stored=True)
    builder.add_text_field(ATTRIBUTES, stored=False)
    for name in FILTERS:
        builder.add_text_field(name, stored=name in ("corpus", "backbone", LABEL), tokenizer_name="raw",
                               index_option="basic")
    builder.add_text_field("run_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_integer_field("step_idx", stored=True, indexed=False)
    return builder.build()


def filter_text(column: str, value: Any) -> str | None:
    """A slice or label value as the index holds it (None: the step has none, no term)."""
    if column == LABEL:
        return LABEL_TEXTS.get(None if value is None else int(value))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if column == "temperature":
        return repr(float(value))
    return str(value)


def document(row: Mapping[str, Any], index_schema: tantivy.Schema) -> tantivy.Document:
    """The index document of one step row (``STEP_COLUMNS``)."""
    values: dict[str, Any] = {"run_id": str(row["run_id"]), "step_idx": int(row["step_idx"])}
    for name, column in TEXT_FIELDS.items():
        if row.get(column):
            values[name] = str(row[column])
    kept = " ".join(str(row[c]) for c in ("failure_mode", "error_code", "extra") if row.get(c))
    if kept:
        values[ATTRIBUTES] = kept
    for column in FILTERS:
        text = filter_text(column, row.get(column))
        if text is not None:
            values[column] = text
    return tantivy.Document.from_dict(values, index_schema)
