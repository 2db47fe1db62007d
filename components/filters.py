"""The shared slice in the sidebar, bound to the URL so a link restores it.

Each filter is a multiselect whose key is the query parameter (``?backbone=GPT-4.1&...``);
Streamlit's ``bind="query-params"`` keeps widget and URL in step in both directions.

A link can ask for a value the store does not hold (a typo, another store's backbone, a corpus
not ingested here). Streamlit 1.67 drops such a value from a bound widget and from the URL
without a word, and the page would then show everything. So the URL is read before the widgets
exist, the values that are not options are remembered, and one warning names each of them
(drawn by ``view_state.report``, as every page's link problems are).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from auditatlas.schema import LABEL_CHOICES, SLICE_COLUMNS
from auditatlas.view_state.state_fields import SLICE_LABELS as LABELS  # noqa: F401 - pages use describe
from auditatlas.view_state.state_fields import slice_not_held
from auditatlas.views import LABELS as LABELS_FIELD
from components.safe import md
from components.view_state import report

# session_state key: {column: (values the link asked for that the store lacks, the widget value then)}
UNKNOWN_KEY = "_slice_values_not_in_store"
# session_state key: the sentence for a link's label choice that is none (reported by the sidebar
# while the reader keeps the released labels; view_state.read leaves it to the sidebar).
BAD_LABELS_KEY = "_labels_not_a_choice"


def slice_sidebar(options: pd.DataFrame) -> dict[str, list[str]]:
    """Draw the slice filters from ``slice_options`` rows; return the chosen values per column."""
    by_column = {column: _counts(options, column) for column in SLICE_COLUMNS}
    unknown = _remember_unknown(by_column)
    chosen: dict[str, list[str]] = {}
    st.sidebar.header("Slice")
    st.sidebar.caption("Empty means all. The URL keeps the slice: share it to share this view.")
    for column in SLICE_COLUMNS:
        counts = by_column[column]
        if not counts:
            chosen[column] = []
            continue
        # No format_func: the URL binding matches the displayed option text, so options stay
        # the plain values a link carries (?backbone=GPT-4.1); run counts go in the help, which
        # renders Markdown, so the values (read from release files) are escaped there.
        chosen[column] = st.sidebar.multiselect(
            LABELS[column],
            options=list(counts),
            key=column,
            bind="query-params",
            help="Runs per value: " + ", ".join(f"{md(v)}: {n:,}" for v, n in counts.items()),
        )
    _forget_touched(unknown, chosen, {c for c, counts in by_column.items() if counts})
    if unknown:
        report([not_in_store_message({c: values for c, (values, _) in unknown.items()})])
    return chosen


def labels_sidebar() -> str:
    """Draw the label choice under the slice; return it (``labels`` in the URL, written only
    when it is not the released labels: a bound widget drops its default from the URL).

    A link's value that is no choice is dropped by the bound widget on the first run, without a
    word (as a slice value the store lacks): so it is read first, and its sentence stays on
    screen until the reader picks a choice."""
    _, problem = LABELS_FIELD.parse(st.query_params.get_all(LABELS_FIELD.name))
    if problem:
        st.session_state[BAD_LABELS_KEY] = problem
    st.sidebar.header("Labels")
    chosen = st.sidebar.radio(
        "Labels the views read",
        options=list(LABEL_CHOICES),
        key=LABELS_FIELD.name,
        bind="query-params",
        help="; ".join(f"**{name}**: {meaning}" for name, meaning in LABEL_CHOICES.items()),
    )
    if chosen != LABELS_FIELD.default:
        st.session_state.pop(BAD_LABELS_KEY, None)
    if st.session_state.get(BAD_LABELS_KEY):
        report([st.session_state[BAD_LABELS_KEY]])
    return chosen


def not_in_store_message(unknown: dict[str, list[str]]) -> str:
    """One sentence naming each value a link asked for that the store does not hold (plain
    text: ``report`` escapes it); the export says the same."""
    return slice_not_held(unknown)


def _counts(options: pd.DataFrame, column: str) -> dict[str, int]:
    values = options.loc[options["column_name"] == column, ["value", "runs"]]
    return dict(zip(values["value"].astype(str), values["runs"]))


def _remember_unknown(by_column: dict[str, dict[str, int]]) -> dict[str, tuple[list[str], list[str]]]:
    """Values in the URL that are not options, kept across reruns (Streamlit drops them from the
    URL on the first run, so only that run can see them)."""
    unknown: dict[str, tuple[list[str], list[str]]] = dict(st.session_state.get(UNKNOWN_KEY, {}))
    for column, counts in by_column.items():
        asked = [v for v in st.query_params.get_all(column) if v != ""]
        missing = list(dict.fromkeys(v for v in asked if v not in counts))
        if missing:
            kept = [v for v in dict.fromkeys(asked) if v in counts]
            unknown[column] = (missing, kept)
    st.session_state[UNKNOWN_KEY] = unknown
    return unknown


def _forget_touched(unknown: dict[str, tuple[list[str], list[str]]], chosen: dict[str, list[str]],
                   with_widget: set[str]) -> None:
    """Once the reader changes a filter, the link's request for it is answered: drop its warning.

    A column without options has no widget: its value stays in the URL and is found again on
    every run, so it is forgotten as soon as the URL no longer carries it.
    """
    for column in list(unknown):
        if column in with_widget:
            if list(chosen[column]) != unknown[column][1]:
                del unknown[column]
        elif not st.query_params.get_all(column):
            del unknown[column]
    st.session_state[UNKNOWN_KEY] = unknown
