"""Run columns of a table: a short label that tells runs apart, the full id beside it.

Every table that lists runs shows both: the label (auditatlas.run_labels) to read and pick by,
the full id to copy (select the cell, then Ctrl+C / Cmd+C: st.dataframe cells are copyable) or
paste into the explorer's "Run id contains" box. Both are text cells, never markup.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import streamlit as st

from auditatlas import run_labels
from auditatlas.run_labels import run_label

LABEL_HELP = ("A short label that tells runs apart: for MAADBench rooms the room id, difficulty, outcome and the "
              "time the room ended; for traces of your own the root span's name and the run's start time (UTC); "
              "otherwise the run's own id. The full id is in the 'run id' column.")
ID_HELP = "The full run id: select the cell and copy it (Ctrl+C, or Cmd+C on a Mac)."
CHAR_PX, CELL_PAD_PX, MAX_LABEL_PX = 6.8, 28, 420  # the grid's 14 px sans font: under 7 px a character


def label_width(labels: Iterable[str]) -> int:
    """Pixels for the label column: its longest label, whole (up to a bound)."""
    longest = max((len(s) for s in labels), default=10)
    return int(min(MAX_LABEL_PX, max(80, longest * CHAR_PX + CELL_PAD_PX)))


def labels(ids: Iterable[Any], difficulty: Iterable[Any] | None = None) -> list[str]:
    """The label of each run id (with its run's difficulty, when the table has it)."""
    ids = list(ids)
    return [run_label(r, d) for r, d in zip(ids, difficulty if difficulty is not None else [None] * len(ids))]


def label_first(frame: pd.DataFrame, difficulty: Iterable[Any] | None = None,
                names: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, dict]:
    """A list whose ``run`` column holds full ids, as shown: the label first (what the reader
    picks by), the full id last as ``run_id``; and the column config for both. ``names``: the
    names runs carry (``run_labels.names_of``)."""
    shown = run_labels.label_first(frame, difficulty, names)
    return shown, columns(list(shown["run"]))


def with_labels(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """``frame`` with a ``run`` label column just before its ``run_id`` column, and the column
    config for both. A frame without ``run_id``, or with a ``run`` column of its own, comes back
    as it is."""
    if "run_id" not in frame.columns or "run" in frame.columns:
        return frame, {}
    names = labels(frame["run_id"], frame["difficulty"] if "difficulty" in frame.columns else None)
    shown = frame.copy()
    shown.insert(shown.columns.get_loc("run_id"), "run", names)
    return shown, columns(names)


def columns(names: list[str]) -> dict:
    """Column config of the label column ``run`` and the full id column ``run_id``."""
    return {
        "run": st.column_config.TextColumn("run", width=label_width(names), help=LABEL_HELP),
        "run_id": st.column_config.TextColumn("run id", width="medium", help=ID_HELP),
    }
