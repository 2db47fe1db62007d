"""A board as JSON, so its default view can be kept per store version (``queries.kept``).

What is kept is everything a page or an export draws: the rows' metrics, roles and seeds, the
contrasts, notes, extra tables, coverage and the published-vs-recomputed cells. What is not:
the rows' per-item arrays (``BoardRow.items``), which only the paired tests read, and those
ran before the board was kept. A decoded board therefore draws, exports and reconciles like a
computed one, but cannot be contrasted again.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import AtlasError
from ..schema import DEFAULT_LABELS
from ..stats import Contrast
from ..view_state.state_fields import filters_any, labels_of
from . import Query
from .board_published import Cell, reconcile
from .board_registry import Board, BoardResult, BoardRow, registry, run_board
from .board_seeds import Coverage

LAYOUT = 1  # bump when the encoding changes in a way the code digest would not show
_NOT_KEPT = {BoardRow: ("items",)}


def encode(result: BoardResult, cells: list[Cell]) -> dict[str, Any]:
    """The board and its cells as plain JSON values."""
    return {"layout": LAYOUT, "result": _fields(result), "cells": [_fields(c) for c in cells]}


def decode(value: dict[str, Any]) -> tuple[BoardResult, list[Cell]]:
    """What :func:`encode` wrote, as the classes the views draw."""
    if value.get("layout") != LAYOUT:
        raise ValueError(f"kept board layout {value.get('layout')!r}, expected {LAYOUT}")
    raw = dict(value["result"])
    raw["metrics"] = tuple(raw["metrics"])
    raw["rows"] = [BoardRow(**row) for row in raw["rows"]]
    raw["contrasts"] = [Contrast(**c) for c in raw["contrasts"]]
    raw["coverage"] = [Coverage(**c) for c in raw["coverage"]]
    return BoardResult(**raw), [Cell(**c) for c in value["cells"]]


def _fields(obj: Any) -> dict[str, Any]:
    skip = _NOT_KEPT.get(type(obj), ())
    return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name not in skip}


def _plain(value: Any) -> Any:
    """JSON's own types: numpy scalars as Python numbers, tuples as lists, dataclasses by field."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)  # NaN passes as JSON's NaN (queries.kept writes with allow_nan)
    return value


# What keeps a result per store version: ``queries.kept.remember`` bound to a store root
# (name, compute) -> (value, read). Handed in, so the analyses never import the query layer.
Remember = Callable[[str, Callable[[], Any]], tuple[Any, bool]]


def is_default_view(board: Board, slice_: Mapping[str, Any] | None) -> bool:
    """Whether ``slice_`` asks for the board as every reader first sees it: no filter and the
    released labels (a board that takes no slice is always its default view)."""
    return not board.allows_slice or (not filters_any(slice_) and labels_of(slice_) == DEFAULT_LABELS)


def kept_name(name: str, corpus: str) -> str:
    return f"board/{name}/{corpus}"


def board(name: str, query: Query, corpus: str, slice_: Mapping[str, Any] | None = None,
          remember: Remember | None = None) -> tuple[BoardResult, list[Cell]]:
    """Board ``name`` on ``corpus`` and its published-vs-recomputed cells. The default view is
    read from (or kept by) ``remember`` when one is given; any other slice is computed."""
    def compute() -> tuple[BoardResult, list[Cell]]:
        result = run_board(name, query, corpus, dict(slice_) if slice_ else None)
        return result, reconcile(result, query)

    boards = registry()
    if remember is None or name not in boards or not is_default_view(boards[name], slice_):
        return compute()
    value, _ = remember(kept_name(name, corpus), lambda: encode(*compute()))
    return decode(value)


def keep_all(query: Query, remember: Remember, only: str | None = None) -> list[str]:
    """Compute and keep the default view of every board (``only``: that board) on every corpus
    it can score (what a write does before it returns, so no reader's first open pays for it);
    the names kept. A board the store cannot score is skipped: its page says why, as before."""
    kept = []
    for name, spec in registry().items():
        if only is not None and name != only:
            continue
        for corpus in spec.corpora(query):
            try:
                board(name, query, corpus, None, remember)
            except AtlasError:
                continue
            kept.append(kept_name(name, corpus))
    return kept


KEEP_ENV = "AUDITATLAS_KEEP_BOARDS"


def keeps_after_write() -> bool:
    """Whether a write keeps every board's default view before it returns: yes unless
    ``$AUDITATLAS_KEEP_BOARDS`` is 0 (then the first open of /boards scores and keeps it; the
    test suite sets 0, as its many small writes would each pay the LIVE board's 300 fits)."""
    raw = os.environ.get(KEEP_ENV, "1").strip()
    if raw not in ("0", "1"):
        raise AtlasError(f"{KEEP_ENV} must be 0 or 1, not {raw!r}.")
    return raw == "1"
