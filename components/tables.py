"""Tables that always come with their CSV form (a reviewer can take every number away).

Cells are data: ``st.dataframe`` shows them as text, never HTML or Markdown. The caption is our
own sentence (wrap any data in it with ``components.safe.md``). The CSV keeps every value, but a
text cell that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return) gets a leading apostrophe, so opening the download never executes a
trace's text.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from auditatlas.figures.tables import csv_safe, file_name  # noqa: F401 - one CSV form for app and export
from components import run_columns


def pinned_keys(frame: pd.DataFrame, config: dict | None = None) -> dict:
    """``config`` with the table's key column (its first) pinned at its left, so a wide table
    scrolled sideways still says whose row it is. Only the first: a pinned column moves ahead of
    every unpinned one, and the columns after the key are in the order a reader needs them."""
    config = dict(config or {})
    for name in frame.columns[:1]:
        config[name] = {**(config.get(name) or {}), "pinned": True}
        width = key_width(frame[name])
        if width is not None and config[name].get("width") is None:
            config[name]["width"] = width
    return config


# The grid sizes a column to its first rows, up to about 190 px: a longer key (a board's
# "llm_judge_needed(llama-3.3-70b)") was cut where the row's name matters most. Pixels per
# character of the grid's 14 px font, its padding, and a cap that leaves the values room.
KEY_CHAR_PX, KEY_PAD_PX, KEY_MAX_PX, KEY_FITS_CHARS = 7.5, 28, 420, 22


def key_width(column: pd.Series) -> int | None:
    """Pixels that show the longest key whole (up to KEY_MAX_PX), or None when the grid's own
    width already does."""
    lengths = column.dropna().astype("string").str.len()
    longest = int(lengths.max()) if len(lengths) else 0
    if longest <= KEY_FITS_CHARS:
        return None
    return min(KEY_MAX_PX, int(longest * KEY_CHAR_PX + KEY_PAD_PX))


def table(frame: pd.DataFrame, key: str, caption: str | None = None, download: pd.DataFrame | None = None,
          **kwargs) -> None:
    """Show ``frame`` as text cells (never HTML) with a CSV download beside it.

    A table that lists runs (a ``run_id`` column) shows each run's short label beside its full
    id (components.run_columns); the download keeps the frame's own columns, or is ``download``
    where the shown cells are text made of numbers (the CSV keeps the numbers)."""
    if caption:
        st.caption(caption)
    shown, label_columns = run_columns.with_labels(frame)
    kwargs["column_config"] = pinned_keys(shown, {**label_columns, **(kwargs.get("column_config") or {})})
    st.dataframe(shown, hide_index=True, key=f"table-{key}", **kwargs)
    csv_button(frame if download is None else download, key)


def csv_button(frame: pd.DataFrame, key: str) -> None:
    """The table's CSV download, made when it is clicked: every table of a page wrote its CSV on
    every rerun (each click), for the few a reader takes away. A click downloads without a rerun."""
    st.download_button("Download CSV", lambda: csv_safe(frame).to_csv(index=False).encode("utf-8"),
                       file_name=file_name(key), mime="text/csv", key=f"csv-{key}", on_click="ignore")
