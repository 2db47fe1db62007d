"""The explorer's two lists: the slice's runs (sort, filter, page) and text-search hits.

Both are ``st.dataframe`` tables (cells are text, never markup) with single-row selection:
choosing a row opens that run (and step) in place; search hits also carry a link column to
the same view, for a new tab or a colleague. The controls return plain parameter dicts; the
page runs the named queries with them.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from auditatlas.search.answer import phrase_regex  # noqa: F401 - one literal pattern for both scans
from components import run_columns
from components.tables import pinned_keys

SORTS: dict[str, str] = {  # output column -> what the reader sees
    "run": "run", "corpus": "corpus", "backbone": "backbone", "difficulty": "difficulty", "outcome": "outcome",
    "steps": "steps", "anomalous_steps": "anomalous steps", "chain_length": "chain length",
}
PAGE_SIZES = (25, 50, 100)
RUN_COLUMNS = {
    "anomalous_steps": st.column_config.NumberColumn("anomalous steps", help="Steps labeled anomalous (label 1)."),
    "chain_length": st.column_config.NumberColumn(
        "chain length", help="The most failed steps in one scope (puzzle, or the run), when two or more: "
                             "a propagation chain. 0 = no chain."),
}


def like_pattern(text: str) -> str:
    """``%text%`` for ILIKE … ESCAPE '\\': the user's own %, _ and \\ match literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"




@dataclass
class RunListRequest:
    params: dict[str, Any]  # explorer_runs.sql's parameters, without slice and page
    page_size: int


def _range(label: str, key: str, help: str | None = None) -> tuple[int | None, int | None]:
    a, b = st.columns(2)
    lo = a.number_input(f"{label}: at least", min_value=0, step=1, value=None, key=f"{key}_min", help=help)
    hi = b.number_input(f"{label}: at most", min_value=0, step=1, value=None, key=f"{key}_max")
    return (None if lo is None else int(lo)), (None if hi is None else int(hi))


def run_list_controls(options: pd.DataFrame) -> RunListRequest:
    """Sort, filter and page-size widgets of the run list (values in session state, keys ``runs_*``)."""
    c1, c2, c3, c4 = st.columns([2, 1, 3, 1])
    sort = c1.selectbox("Sort by", list(SORTS), format_func=SORTS.get, key="runs_sort")
    descending = c2.toggle("Descending", key="runs_desc")
    run_q = c3.text_input("Run id contains", key="runs_q", placeholder="e.g. room_0042 or Algorithm-Generated/1")
    page_size = c4.selectbox("Rows", PAGE_SIZES, index=0, key="runs_page_size")
    with st.popover("Filter on each column"):
        st.caption("Within the sidebar slice. Empty means all.")
        chosen = {}
        for col in ("corpus", "backbone", "difficulty", "outcome"):
            values = options.loc[options["column_name"] == col, "value"].tolist()
            chosen[col] = st.multiselect(col.capitalize(), values, key=f"runs_f_{col}")
        steps = _range("Steps", "runs_steps")
        anomalous = _range("Anomalous steps", "runs_anom")
        chain = _range("Chain length", "runs_chain", help="0 = no chain (fewer than two failed steps in every scope).")
    params = {
        "run_q": run_q or "", "run_pattern": like_pattern(run_q or ""),
        "f_corpus": chosen["corpus"], "f_backbone": chosen["backbone"], "f_difficulty": chosen["difficulty"],
        "f_outcome": chosen["outcome"], "min_steps": steps[0], "max_steps": steps[1],
        "min_anomalous": anomalous[0], "max_anomalous": anomalous[1], "min_chain": chain[0], "max_chain": chain[1],
        "sort": sort, "descending": bool(descending),
    }
    return RunListRequest(params=params, page_size=int(page_size))


def page_number(key: str, total: int, page_size: int) -> tuple[int, int]:
    """The page the reader is on (1-based, clamped to the pages there are) and the page count."""
    pages = max(1, math.ceil(total / page_size))
    current = st.session_state.get(key, 1)
    if not isinstance(current, int) or current > pages or current < 1:
        current = min(max(int(current or 1), 1), pages)
        st.session_state[key] = current
    return current, pages


def pager(key: str, pages: int) -> None:
    if pages > 1:
        st.pagination(pages, key=key, max_visible_pages=9)


def run_table(frame: pd.DataFrame, open_run: str | None, key: str, on_open: Callable[[str], None],
              names: Mapping[str, str] | None = None) -> None:
    """The page of runs; selecting a row opens the run (``on_open(run_id)``)."""
    frame = frame.reset_index(drop=True)
    rows = frame.index[frame["run"] == open_run].tolist() if open_run else []
    table_key = f"{key}-{abs(hash((open_run, tuple(frame['run']))))}"

    def chosen() -> None:
        picked = st.session_state[table_key]["selection"]["rows"]
        if picked:
            on_open(str(frame.loc[picked[0], "run"]))

    shown, labels_config = run_columns.label_first(frame, frame.get("difficulty"), names)
    st.dataframe(
        shown, hide_index=True, key=table_key, on_select=chosen, selection_mode="single-row",
        selection_default={"selection": {"rows": rows[:1]}} if rows else None,
        column_config=pinned_keys(shown, {**RUN_COLUMNS, **labels_config}), width="stretch", height=min(38 + 35 * max(len(frame), 1), 420),
    )


def search_table(frame: pd.DataFrame, links: list[str], key: str, on_open: Callable[[str, int], None],
                 names: Mapping[str, str] | None = None) -> None:
    """Search hits with a link column; selecting a row opens that run at that step."""
    shown = frame[["run", "step", "action", "agent", "found_in", "snippet"]].copy()
    shown["snippet"] = [("…" if cut else "") + (s or "").replace("\n", " ") + "…"
                        for s, cut in zip(frame["snippet"], frame["cut_before"])]
    shown, labels_config = run_columns.label_first(shown, frame.get("difficulty"), names)
    shown.insert(0, "link", links)
    table_key = f"{key}-{abs(hash(tuple(links)))}"

    def chosen() -> None:
        picked = st.session_state[table_key]["selection"]["rows"]
        if picked:
            row = shown.iloc[picked[0]]
            on_open(str(row["run_id"]), int(row["step"]))

    st.dataframe(
        shown, hide_index=True, key=table_key, on_select=chosen, selection_mode="single-row", width="stretch",
        column_config=pinned_keys(shown, {
            "link": st.column_config.LinkColumn("open", display_text="open ↗", width="small",
                                                help="This step in the explorer, as a link (opens a new tab)."),
            **labels_config,
            "found_in": st.column_config.TextColumn("found in", width="small"),
            "snippet": st.column_config.TextColumn("snippet", width="large"),
        }),
    )
