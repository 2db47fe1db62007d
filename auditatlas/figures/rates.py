"""Plotly figures drawn from small, already aggregated frames, and the same rates as coloured tables.

Plotly renders a subset of HTML in tick labels, hover text and titles; every label that comes
from the data (backbone, action, capability names) goes through ``auditatlas.figures.text.plotly``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import colors
from .text import plotly as plotly_text
from .text import plotly_list


def rate_heatmap(
    frame: pd.DataFrame,
    rows: str,
    cols: str,
    value: str,
    count: str,
    row_order: list[str] | None = None,
    col_order: list[str] | None = None,
    title: str = "",
    colorscale: str = "RdYlGn",
    zrange: tuple[float, float] = (0, 100),
) -> go.Figure:
    """Heatmap of a percentage with the count it rests on in every cell; blank where undefined."""
    pivot, counts = _pivoted(frame, rows, cols, value, count, row_order, col_order)
    z = pivot.to_numpy(dtype=float)
    n = counts.to_numpy(dtype=float)
    text = np.where(
        np.isnan(z), np.where(np.isnan(n) | (n == 0), "", "–"),
        np.char.add(np.char.add(np.char.mod("%.1f", np.nan_to_num(z)), "<br>n="),
                    np.char.mod("%d", np.nan_to_num(n).astype(int))),
    )
    fig = go.Figure(go.Heatmap(
        z=z, x=plotly_list(pivot.columns), y=plotly_list(pivot.index),
        text=text, texttemplate="%{text}", colorscale=colorscale,
        zmin=zrange[0], zmax=zrange[1], hoverongaps=False,
        hovertemplate="%{y} · %{x}: %{z:.1f}%<extra></extra>",
    ))
    fig.update_layout(title=plotly_text(title), margin=dict(l=10, r=10, t=40 if title else 10, b=10), height=60 + 42 * len(pivot.index))
    fig.update_yaxes(autorange="reversed")
    return fig


def rate_grid(
    frame: pd.DataFrame,
    rows: str,
    cols: str,
    value: str,
    count: str,
    col_order: list[str] | None = None,
    stops: colors.Stops = colors.RED_YELLOW_GREEN,
    zrange: tuple[float, float] = (0, 100),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A percentage per (row, column) as a table a person reads as a heatmap: each cell its value
    and the count it rests on ('96.1 · n=76'), '–' where the count is there but the rate is not,
    blank where there is nothing; with each cell's CSS (its colour on ``stops``). A missing row
    or column name reads '(none)', as the queries name it."""
    frame = frame.assign(**{key: frame[key].astype(object).where(frame[key].notna(), "(none)") for key in (rows, cols)})
    pivot, counts = _pivoted(frame, rows, cols, value, count, None, col_order, dropna=False)
    low, high = zrange
    text = pd.DataFrame({rows: [str(r) for r in pivot.index]})
    styles = pd.DataFrame({rows: [""] * len(pivot.index)})
    for col in pivot.columns:
        cells, css = [], []
        for rate, n in zip(pivot[col], counts[col]):
            if pd.isna(rate):
                cells.append("" if pd.isna(n) or n == 0 else "–")
                css.append("")
            else:
                cells.append(f"{rate:.1f} · n={int(n):,}")
                css.append(colors.background((rate - low) / (high - low), stops))
        title = unique_title(str(col), set(text.columns))
        text[title], styles[title] = cells, css
    return text, styles


def _pivoted(frame: pd.DataFrame, rows: str, cols: str, value: str, count: str, row_order: list[str] | None,
             col_order: list[str] | None, dropna: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``value`` and ``count`` pivoted to rows x cols, in the orders given (names not in the frame
    left out), the counts on the values' cells."""
    pivot = frame.pivot_table(index=rows, columns=cols, values=value, aggfunc="first", dropna=dropna)
    counts = frame.pivot_table(index=rows, columns=cols, values=count, aggfunc="first", dropna=dropna)
    if row_order:
        pivot = pivot.reindex([r for r in row_order if r in pivot.index])
    if col_order:
        pivot = pivot.reindex(columns=[c for c in col_order if c in pivot.columns])
    return pivot, counts.reindex(index=pivot.index, columns=pivot.columns)


def unique_title(title: str, taken: set[str]) -> str:
    """``title``, or with ' (2)', ' (3)'... where a column already has it (names come from the data:
    a backbone may be called as the row column is)."""
    candidate, k = title, 1
    while candidate in taken:
        k += 1
        candidate = f"{title} ({k})"
    return candidate
