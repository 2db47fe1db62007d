"""The Detectors page's AUROC grid as a clickable table: a click on a detector's cell picks the
cell whose errors the page lists (auditatlas.views.detectors_view computes the rest).

Tables go through ``st.dataframe`` (text cells, never HTML).
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from components.tables import csv_button, pinned_keys


def grid_table(text: pd.DataFrame, colors: pd.DataFrame, key: str, on_select: Callable[[], None] | None,
               detail: pd.DataFrame | None = None) -> None:
    """The grid of one backbone as a table, each cell in its colour: click a detector cell to list
    its errors. The CSV holds ``detail`` (the cells with their intervals and counts) when given."""
    styler = text.style.apply(lambda _: colors, axis=None)
    st.dataframe(styler, hide_index=True, key=f"table-{key}", on_select=on_select or "ignore",
                 selection_mode="single-cell", width="stretch", column_config=pinned_keys(text))
    csv_button(text if detail is None else detail, key)


def selected_cell(key: str) -> tuple[int, str] | None:
    """The (row position, column title) of the grid table's selected cell, if any."""
    state = st.session_state.get(f"table-{key}")
    cells = (state or {}).get("selection", {}).get("cells", []) if isinstance(state, dict) or hasattr(state, "get") else []
    if not cells:
        return None
    row, col = cells[0]
    return int(row), str(col)
