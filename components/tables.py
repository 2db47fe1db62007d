"""Tables that always come with their CSV form (a reviewer can take every number away).

Cells are data: ``st.dataframe`` shows them as text, never HTML or Markdown. The caption is our
own sentence (wrap any data in it with ``components.safe.md``). The CSV keeps every value, but a
text cell that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return) gets a leading apostrophe, so opening the download never executes a
trace's text.
"""
from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from components import run_labels

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FILE_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with text cells that a spreadsheet would evaluate defused (numbers untouched)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v)
    return out


def file_name(key: str) -> str:
    """A download name from a key that may hold data (a corpus name): letters, digits, . _ - only."""
    return (_FILE_NAME_BAD.sub("_", key).strip("._") or "table") + ".csv"


def table(frame: pd.DataFrame, key: str, caption: str | None = None, download: pd.DataFrame | None = None,
          **kwargs) -> None:
    """Show ``frame`` as text cells (never HTML) with a CSV download beside it.

    A table that lists runs (a ``run_id`` column) shows each run's short label beside its full
    id (components.run_labels); the download keeps the frame's own columns, or is ``download``
    where the shown cells are text made of numbers (the CSV keeps the numbers)."""
    if caption:
        st.caption(caption)
    shown, run_columns = run_labels.with_labels(frame)
    if run_columns:
        kwargs["column_config"] = {**run_columns, **(kwargs.get("column_config") or {})}
    st.dataframe(shown, hide_index=True, key=f"table-{key}", **kwargs)
    st.download_button(
        "Download CSV",
        csv_safe(frame if download is None else download).to_csv(index=False).encode("utf-8"),
        file_name=file_name(key),
        mime="text/csv",
        key=f"csv-{key}",
    )
