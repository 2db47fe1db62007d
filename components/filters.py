"""The shared slice in the sidebar, bound to the URL so a link restores it.

Each filter is a multiselect whose key is the query parameter (``?backbone=GPT-4.1&...``);
Streamlit's ``bind="query-params"`` keeps widget and URL in step in both directions.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from queries import SLICE_COLUMNS

LABELS = {
    "corpus": "Corpus",
    "backbone": "Backbone (LLM)",
    "difficulty": "Difficulty",
    "temperature": "Temperature",
    "domain": "Domain",
    "outcome": "Run outcome",
}


def slice_sidebar(options: pd.DataFrame) -> dict[str, list[str]]:
    """Draw the slice filters from ``slice_options`` rows; return the chosen values per column."""
    chosen: dict[str, list[str]] = {}
    st.sidebar.header("Slice")
    st.sidebar.caption("Empty means all. The URL keeps the slice: share it to share this view.")
    for column in SLICE_COLUMNS:
        values = options.loc[options["column_name"] == column, ["value", "runs"]]
        if values.empty:
            chosen[column] = []
            continue
        counts = dict(zip(values["value"], values["runs"]))
        # No format_func: the URL binding matches the displayed option text, so options stay
        # the plain values a link carries (?backbone=GPT-4.1); run counts go in the help.
        chosen[column] = st.sidebar.multiselect(
            LABELS[column],
            options=list(counts),
            key=column,
            bind="query-params",
            help="Runs per value: " + ", ".join(f"{v}: {n:,}" for v, n in counts.items()),
        )
    return chosen


def describe(slice_: dict[str, list[str]]) -> str:
    parts = [f"{LABELS[c].lower()} in {', '.join(v)}" for c, v in slice_.items() if v]
    return "; ".join(parts) if parts else "everything loaded"
