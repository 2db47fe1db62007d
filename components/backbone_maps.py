"""The choice above a page's per-backbone heatmaps: one backbone's map, or every backbone's
side by side (Propagation and Detectors; both are link fields, bound to the URL)."""
from __future__ import annotations

import streamlit as st


def choose(label: str, options: list[str], key: str, *, figure: str, index: int = 0, help: str | None = None,
           only_the_map: bool = True) -> tuple[str, bool]:
    """(the backbone chosen among ``options``, whether every backbone's map is drawn side by side).

    ``only_the_map``: the choice picks nothing but the map, so it is greyed out while every map
    is drawn (on Detectors it also picks the table and errors below, so it stays live)."""
    c1, c2 = st.columns([2, 3], vertical_alignment="bottom")
    side_by_side = c2.toggle("Every backbone side by side", key="side_by_side", bind="query-params",
                             help=f"Draw every backbone's heatmap at once ({figure}'s layout).")
    shown = c1.selectbox(label, options, index=index, key=key, bind="query-params", help=help,
                         disabled=side_by_side and only_the_map)
    return shown, side_by_side
