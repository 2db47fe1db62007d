"""Plotly figures drawn from small, already aggregated frames (built in ``auditatlas.figures``)."""
from __future__ import annotations

from auditatlas.figures.rates import rate_heatmap  # noqa: F401 - re-exported
