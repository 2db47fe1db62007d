"""What the search index holds per step: the fields a query reads, the cell a slice and label
restrict on, and the stored values a hit shows.

Searchable (tantivy's default tokenizer: words, lower-cased; positions kept for phrases):
``input`` and ``output`` (the step's text in and out), ``agent``, ``action`` and
``attributes`` (what the adapter kept of the step beyond the schema: ``extra``, plus its
failure mode and error code). A query without a field name reads input, output and
attributes; ``agent:`` and ``action:`` name a field.

The cell: one number per step for its run's slice values and its label (``CELL_COLUMNS``),
a hash the build computes in DuckDB. The build also writes the index's cell table (every cell
with its values, a few thousand rows at a million rooms), so a search turns the sidebar slice
and the label choice into the cells they keep and restricts the hits to those, inside the
engine, before ranking and paging. One indexed number per step instead of seven terms: a
fifth less indexing time (35 against 28 us of CPU a step at 1,500 rooms).

Stored (read back for the page's hits only): the step's key, its cell (whose row gives corpus,
backbone and label), agent, action, and the text in and out, which the snippets are cut from.
Why store the text (about 70 bytes a step on disk, no measurable build time): tantivy reads
twenty hits' documents in well under a millisecond, where fetching twenty scattered steps'
text from the store took 45 to 800 ms at 20,000 rooms (a Parquet row group read per hit).

The documents themselves are JSON objects the build's SQL writes (``queries/sql/search_steps.sql``,
one per step, keys as the field names here), added with tantivy's ``add_json``: no Python
object per field. A key that names no field is silently dropped by tantivy, which is why a
test compares that query's keys with ``FIELDS``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

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
CELL = "cell"
CELL_COLUMNS: tuple[str, ...] = (*SLICE_COLUMNS, LABEL)
LABEL_TEXTS = {1: "anomaly", 0: "normal", None: "unlabeled"}
FIELDS: tuple[str, ...] = (*SEARCHABLE, CELL, "run_id", "step_idx")


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in TEXT_FIELDS:
        builder.add_text_field(name, stored=True)
    builder.add_text_field(ATTRIBUTES, stored=False)
    builder.add_unsigned_field(CELL, stored=True, indexed=True)
    # tantivy has no stored-only text field: the run id is one raw term, the cheapest indexing.
    builder.add_text_field("run_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_integer_field("step_idx", stored=True, indexed=False)
    return builder.build()


def _matches(value: Any, chosen: Sequence[Any], column: str) -> bool:
    """Whether a cell's ``value`` of ``column`` is one of the slice's ``chosen`` values, as the
    named queries' ``column = ANY($column)`` reads it (queries/slices.py): a missing value
    matches nothing, temperature compares as a number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if column == "temperature":
        return float(value) in {float(v) for v in chosen}
    return str(value) in {str(v) for v in chosen}


def cells_kept(cells: Sequence[Mapping[str, Any]], slice_: Mapping[str, Any], label: str) -> list[int] | None:
    """The ids of the cells the slice and the label choice keep; None when they keep every step
    (no restriction to add)."""
    filtered = {c: list(slice_.get(c) or []) for c in SLICE_COLUMNS if slice_.get(c)}
    if not filtered and label == "any":
        return None
    return [int(cell[CELL]) for cell in cells
            if all(_matches(cell.get(c), values, c) for c, values in filtered.items())
            and (label == "any" or cell.get(LABEL) == label)]
