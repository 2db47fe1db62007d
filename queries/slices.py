"""The slice every page shares: its columns and their normalised values.

A slice is a mapping from a run column to the values chosen for it; a missing or empty column
means "all". Named queries that take the slice (``@slice`` in their text, see
``queries/template.py``) filter on the non-empty columns with bound predicates, so the slice's
values never reach SQL text.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The columns of the slice every page shares, each filtering the run column of its name; declared
# with the schema, so the page declarations (auditatlas.views) read them without the query layer.
from auditatlas.schema import SLICE_COLUMNS


def slice_params(slice_: Mapping[str, Any] | None) -> dict[str, Any]:
    """Values of the shared slice: every column a list, an empty list meaning 'all'.

    Named queries filter on the non-empty ones with bound ``col = ANY($col)`` predicates (see
    ``queries.template.slice_ctes``), so the slice never reaches SQL text.
    """
    slice_ = slice_ or {}
    params: dict[str, Any] = {}
    for col in SLICE_COLUMNS:
        values = slice_.get(col) or []
        if col == "temperature":
            params[col] = [float(v) for v in values]
        else:
            params[col] = [str(v) for v in values]
    return params


def filtered_columns(slice_: Mapping[str, Any] | None) -> dict[str, list]:
    """The slice's columns that filter something, with their values."""
    return {col: values for col, values in slice_params(slice_).items() if values}
