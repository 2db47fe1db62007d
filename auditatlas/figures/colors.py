"""Cell colours for tables drawn as heatmaps (the app's data grid and the export's HTML table
take CSS per cell): the same scales the Plotly heatmaps use, as CSS backgrounds.

A coloured table instead of a Plotly heatmap where the grid is the answer: a page's first Plotly
chart costs its open in the browser more than the rest of a page (bench/README.md)."""
from __future__ import annotations

import math

Stops = tuple[tuple[float, tuple[int, int, int]], ...]

# Plotly's RdYlGn, low red to high green, and Reds, low white to high dark red, in a few stops.
RED_YELLOW_GREEN: Stops = ((0.0, (178, 24, 43)), (0.25, (239, 138, 98)), (0.5, (247, 247, 212)),
                           (0.75, (166, 217, 106)), (1.0, (26, 152, 80)))
REDS: Stops = ((0.0, (255, 245, 240)), (0.35, (252, 146, 114)), (0.7, (222, 45, 38)), (1.0, (103, 0, 13)))
# Plotly's OrRd, low cream to high dark red (the propagation heatmaps' scale).
ORANGE_REDS: Stops = ((0.0, (255, 247, 236)), (0.25, (253, 212, 158)), (0.5, (252, 141, 89)), (0.75, (215, 48, 31)),
                      (1.0, (127, 0, 0)))
# A cell that cannot hold a value (a pair that never occurs): the heatmaps' colour and its CSS.
GREY_HEX = "#d4d4d4"
GREY = "background-color: rgb(212, 212, 212)"
# A pale cell is its colour seen through this much white (the heatmaps' veil).
VEIL_ALPHA = 0.62
# Text on a background darker than this (perceived brightness, 0-255) is drawn white.
DARK_BELOW = 110


def background(fraction: float | None, stops: Stops = RED_YELLOW_GREEN, pale: bool = False) -> str:
    """CSS for a cell whose value is ``fraction`` of the scale (clipped to 0-1): its background,
    and white text where that is dark; nothing where the value is missing."""
    if fraction is None or not math.isfinite(float(fraction)):
        return ""
    v = min(max(float(fraction), 0.0), 1.0)
    for (x0, c0), (x1, c1) in zip(stops, stops[1:]):
        if v <= x1:
            t = (v - x0) / (x1 - x0)
            rgb = [a + t * (b - a) for a, b in zip(c0, c1)]
            break
    if pale:
        rgb = [VEIL_ALPHA * 255 + (1 - VEIL_ALPHA) * x for x in rgb]
    r, g, b = (round(x) for x in rgb)
    css = f"background-color: rgb({r}, {g}, {b})"
    return css + "; color: white" if 0.299 * r + 0.587 * g + 0.114 * b < DARK_BELOW else css
