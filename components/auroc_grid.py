"""Draw the detector views in the app: the grid as a clickable table, a cell's errors with
explorer links; the figures and frames are built in ``auditatlas.figures.detectors`` (the
export draws the same ones).

Components draw; they never query. Tables go through ``st.dataframe`` (text cells, never HTML).
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from auditatlas.figures.detectors import (  # noqa: F401 - re-exported for the page
    auc_color,
    cell_error_rows,
    cost_chart,
    cost_frame,
    heatmaps,
    long_cells,
    long_means,
    overall_chart,
    overall_frame,
    per_set_frame,
    sets_frame,
    silent_loud_chart,
)
from components.tables import csv_safe, file_name, table


def grid_table(text: pd.DataFrame, num: pd.DataFrame, key: str, on_select: Callable[[], None] | None) -> None:
    """The grid of one backbone as a table: click a detector cell to list its errors."""
    colors = pd.DataFrame("", index=text.index, columns=text.columns)
    for col in text.columns:
        if col in ("action", "success rate", "labeled steps"):
            continue
        colors[col] = num[col].map(auc_color)
    styler = text.style.apply(lambda _: colors, axis=None)
    st.dataframe(styler, hide_index=True, key=f"table-{key}", on_select=on_select or "ignore",
                 selection_mode="single-cell", width="stretch")
    st.download_button("Download CSV", csv_safe(text).to_csv(index=False).encode("utf-8"), file_name=file_name(key),
                       mime="text/csv", key=f"csv-{key}")


def selected_cell(key: str) -> tuple[int, str] | None:
    """The (row position, column title) of the grid table's selected cell, if any."""
    state = st.session_state.get(f"table-{key}")
    cells = (state or {}).get("selection", {}).get("cells", []) if isinstance(state, dict) or hasattr(state, "get") else []
    if not cells:
        return None
    row, col = cells[0]
    return int(row), str(col)


def errors_table(frame: pd.DataFrame, kind: str, key: str) -> None:
    table(cell_error_rows(frame, kind), key, column_config={
        "explorer": st.column_config.LinkColumn("explorer", display_text="open step", width="small"),
        "score": st.column_config.NumberColumn("score", format="%.4g"),
    })
