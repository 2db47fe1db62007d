"""Figures of the Propagation page (built in ``auditatlas.figures.propagation``, shared with the export)."""
from __future__ import annotations

from auditatlas.figures.propagation import (  # noqa: F401 - re-exported
    failure_mode_bars,
    heatmaps,
    length_distribution,
    role_recall_bars,
    role_recall_tables,
    selected_cell,
)
