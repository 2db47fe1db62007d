"""Plotly figures drawn from small, already aggregated frames.

Plotly renders a subset of HTML in tick labels, hover text and titles; every label that comes
from the data (backbone, action, capability names) goes through ``auditatlas.figures.text.plotly``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

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
    pivot = frame.pivot_table(index=rows, columns=cols, values=value, aggfunc="first")
    counts = frame.pivot_table(index=rows, columns=cols, values=count, aggfunc="first")
    if row_order:
        pivot = pivot.reindex([r for r in row_order if r in pivot.index])
    if col_order:
        pivot = pivot.reindex(columns=[c for c in col_order if c in pivot.columns])
    counts = counts.reindex(index=pivot.index, columns=pivot.columns)
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
