"""Figures of the Propagation page, drawn from the small frames auditatlas.analyses.anomaly_propagation returns.

Every label that comes from a corpus (backbone, action) goes through ``text.plotly`` so a name
with markup shows as text. Plotly heatmaps report no click selection to Streamlit (heatmap
traces are not selectable in plotly.js), so each map carries an invisible scatter of one
square marker per clickable cell on top: clicking a cell selects that marker, and its
``customdata`` says which (backbone, source action, later action) it is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from auditatlas.analyses import anomaly_propagation as propagation

from . import colors

# Rows of few failed source steps are drawn pale, as the AUROC grid's cells of few steps.
from .detectors import SMALL_N, VEIL
from .rates import unique_title
from .text import plotly as esc

MAPS_PER_ROW = 3
GREY = colors.GREY_HEX
CELL_PX = 38


def _axis_labels(acts: list[str]) -> list[str]:
    return [esc(propagation.action_label(a)) for a in acts]


def heatmaps(cells: pd.DataFrame) -> go.Figure:
    """One propagation heatmap per backbone (MAADBench Figure 4) on one colour scale (0-100 %).

    ``cells`` is :func:`auditatlas.analyses.anomaly_propagation.heatmap`. A row's label carries its source
    count; a row whose action never failed shows "–"; pairs that never occur in the store are
    grey.
    """
    backbones = sorted(cells["backbone"].unique())
    acts = propagation.action_order(cells["src_action"])
    labels = _axis_labels(acts)
    n_cols = min(len(backbones), MAPS_PER_ROW)
    n_rows = math.ceil(len(backbones) / n_cols)
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=[esc(b) for b in backbones],
                        horizontal_spacing=0.09, vertical_spacing=0.16 if n_rows > 1 else 0.1)
    for i, backbone in enumerate(backbones):
        row, col = i // n_cols + 1, i % n_cols + 1
        grid = cells[cells["backbone"] == backbone]
        _one_map(fig, grid, acts, labels, backbone, row, col)
    side = CELL_PX * len(acts)
    fig.update_layout(
        height=n_rows * (side + 150) + 40,
        margin=dict(l=10, r=10, t=40, b=10),
        coloraxis=dict(colorscale="OrRd", cmin=0, cmax=100,
                       colorbar=dict(title=dict(text="% of failed<br>source steps"), ticksuffix="%", len=0.6)),
        showlegend=False,
        clickmode="event+select",
        dragmode=False,
    )
    fig.update_xaxes(tickangle=0, side="bottom", showgrid=False, fixedrange=True,
                     title=dict(text="later failed action", font=dict(size=11)))
    fig.update_yaxes(autorange="reversed", showgrid=False, fixedrange=True)
    for annotation in fig.layout.annotations:  # the backbone names above the maps
        annotation.update(font=dict(size=13))
    return fig


def _one_map(fig: go.Figure, grid: pd.DataFrame, acts: list[str], labels: list[str], backbone: str,
             row: int, col: int) -> None:
    idx = {a: k for k, a in enumerate(acts)}
    n = len(acts)
    rate = np.full((n, n), np.nan)
    impossible = np.full((n, n), np.nan)
    text = np.full((n, n), "", dtype=object)
    failed = dict.fromkeys(acts, 0)
    clickable: list[tuple[str, str, str]] = []
    for r in grid.itertuples(index=False):
        i, j = idx[r.src_action], idx[r.later_action]
        failed[r.src_action] = int(r.failed)
        if not r.possible:
            impossible[i, j] = 1
        elif r.failed == 0:
            text[i, j] = "–"
        else:
            rate[i, j] = 100 * r.rate
            text[i, j] = f"{100 * r.rate:.0f}"
            hover = (f"{esc(backbone)}<br>{esc(r.src_action)} failed {r.failed:,}×;<br>"
                     f"{r.followed:,} followed by a later failed {esc(r.later_action)} ({100 * r.rate:.1f}%)"
                     + (f"<br>fewer than {SMALL_N} failed source steps: drawn pale" if r.failed < SMALL_N else ""))
            clickable.append((r.src_action, r.later_action, hover))
    ticks = [f"{lab}<br><span style='font-size:10px'>n={failed[a]:,}</span>" for a, lab in zip(acts, labels)]
    fig.add_trace(go.Heatmap(z=impossible, x=labels, y=labels, colorscale=[[0, GREY], [1, GREY]], showscale=False,
                             hoverinfo="skip", xgap=1, ygap=1), row=row, col=col)
    fig.add_trace(go.Heatmap(z=rate, x=labels, y=labels, coloraxis="coloraxis", text=text, texttemplate="%{text}",
                             textfont=dict(size=11), hoverinfo="skip", xgap=1, ygap=1), row=row, col=col)
    # The veil over the rows of few failed source steps (their shares still drawn on it).
    veil = np.where(np.isfinite(rate) & np.array([[failed[a] < SMALL_N] * n for a in acts]), 1.0, np.nan)
    fig.add_trace(go.Heatmap(z=veil, x=labels, y=labels, colorscale=[[0, VEIL], [1, VEIL]], showscale=False,
                             hoverinfo="skip", xgap=1, ygap=1), row=row, col=col)
    # The clickable layer: one invisible square per cell with a rate.
    fig.add_trace(go.Scatter(
        x=[labels[idx[later]] for _, later, _ in clickable],
        y=[labels[idx[src]] for src, _, _ in clickable],
        mode="markers",
        marker=dict(symbol="square", size=CELL_PX - 6, color="rgba(0,0,0,0)", line=dict(width=0)),
        selected=dict(marker=dict(color="rgba(30,60,160,0.35)")),
        unselected=dict(marker=dict(opacity=0)),
        customdata=[[backbone, src, later] for src, later, _ in clickable],
        hovertext=[h for _, _, h in clickable],
        hovertemplate="%{hovertext}<extra></extra>",
        name=esc(backbone),
    ), row=row, col=col)
    fig.update_yaxes(tickmode="array", tickvals=labels, ticktext=ticks, row=row, col=col,
                     categoryorder="array", categoryarray=labels)
    fig.update_xaxes(categoryorder="array", categoryarray=labels, row=row, col=col)
    if col == 1:
        fig.update_yaxes(title=dict(text="failed source action", font=dict(size=11)), row=row, col=col)


SOURCE_COLUMN, COUNT_COLUMN = "failed source action", "n"


@dataclass(frozen=True)
class CellTable:
    """One backbone's heatmap as a table a person reads as one: ``text`` (a row per failed source
    action, its failed steps, then a column per later action by its short name) and each cell's CSS;
    ``numbers`` the same table with each share in % to one decimal (its CSV); ``rows`` the source
    action of each row, ``columns`` the later action under each column title."""

    text: pd.DataFrame
    styles: pd.DataFrame
    numbers: pd.DataFrame
    rows: list[str]
    columns: dict[str, str]


def heatmap_table(cells: pd.DataFrame, backbone: str) -> CellTable:
    """``backbone``'s propagation heatmap (MAADBench Figure 4) as a coloured table: each cell the
    share of the row's failed steps followed by a failed step of the column's action ('84.6%'),
    on the heatmaps' scale; '–' where the row's action never failed; grey and blank where the
    pair never occurs in the store; pale where the row has fewer than ``SMALL_N`` failed steps.
    Columns are titled by the actions' short names (unique even when the data's names collide)."""
    grid = cells[cells["backbone"] == backbone]
    acts = propagation.action_order(cells["src_action"])
    by_pair = {(r.src_action, r.later_action): r for r in grid.itertuples(index=False)}
    failed = {a: 0 for a in acts}
    for r in grid.itertuples(index=False):
        failed[r.src_action] = int(r.failed)
    # Rows as the AUROC grid names actions ('SC · SOLVE_CLUE'): they say what the columns' short names are.
    rows = [a if propagation.action_label(a) == a else f"{propagation.action_label(a)} · {a}" for a in acts]
    text = pd.DataFrame({SOURCE_COLUMN: rows, COUNT_COLUMN: [f"{failed[a]:,}" for a in acts]})
    styles = pd.DataFrame({SOURCE_COLUMN: [""] * len(acts), COUNT_COLUMN: [""] * len(acts)})
    numbers = pd.DataFrame({SOURCE_COLUMN: rows, COUNT_COLUMN: [failed[a] for a in acts]})
    columns: dict[str, str] = {}
    for later in acts:
        title = unique_title(str(propagation.action_label(later)), set(text.columns))
        shown, css, pct = [], [], []
        for src in acts:
            r = by_pair.get((src, later))
            share = None  # the cell's % where it has one
            if r is None or not r.possible:
                shown.append("")
                css.append("" if r is None else colors.GREY)
            elif r.failed == 0:
                shown.append("–")
                css.append("")
            else:
                share = round(100 * r.rate, 1)
                shown.append(f"{share:.1f}%")
                css.append(colors.background(r.rate, colors.ORANGE_REDS, pale=failed[src] < SMALL_N))
            pct.append(share)
        text[title], styles[title], numbers[title] = shown, css, pd.Series(pct, dtype="float64")
        columns[title] = later
    return CellTable(text, styles, numbers, acts, columns)


def selected_cell(event) -> tuple[str, str, str] | None:
    """(backbone, source action, later action) of the clicked cell in a plotly selection event."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points:
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and len(data) == 3:
            return str(data[0]), str(data[1]), str(data[2])
    return None


def length_distribution(lengths: pd.DataFrame) -> go.Figure:
    """Chains per length, one bar group per backbone (shares within the backbone, counts on hover)."""
    per = lengths.groupby(["backbone", "length"], as_index=False)["chains"].sum()
    per["share"] = 100 * per["chains"] / per.groupby("backbone")["chains"].transform("sum")
    fig = go.Figure()
    for backbone, frame in per.groupby("backbone"):
        fig.add_trace(go.Bar(x=frame["length"], y=frame["share"], name=esc(backbone),
                             customdata=frame["chains"],
                             hovertemplate=esc(backbone) + ": length %{x}: %{customdata:,} chains (%{y:.1f}%)<extra></extra>"))
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title=dict(text="chain length (failed steps in the scope)"), dtick=1),
                      yaxis=dict(title=dict(text="% of the backbone's chains"), ticksuffix="%"),
                      legend=dict(orientation="h", y=-0.3))
    return fig


ROLE_COLORS = {"recall": "#1f4e9c", "isolation_recall": "#9bb4dc"}


def role_recall_bars(averages: pd.DataFrame) -> go.Figure:
    """Per role: mean recall beside the same actions' recall in isolation (Figure 8)."""
    roles = [propagation.ROLE_NAMES[str(r)] for r in averages["role"]]
    fig = go.Figure()
    for column, name in [("recall", "recall on the role"), ("isolation_recall", "same actions in isolation")]:
        fig.add_trace(go.Bar(x=roles, y=100 * averages[column], name=name, marker_color=ROLE_COLORS[column],
                             text=[f"{100 * v:.0f}%" for v in averages[column]], textposition="outside",
                             hovertemplate="%{x}: %{y:.1f}%<extra>" + name + "</extra>"))
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=10, b=10),
                      yaxis=dict(range=[0, 110], ticksuffix="%", title=dict(text="recall (mean over detectors)")),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def _mode_color(mode: str, cascade: str, k: int) -> str:
    if mode == "FM-5":
        return "#b2182b"
    if mode == "not recorded":
        return {"cascade": "#8c8c8c", "first failure in its scope": "#bdbdbd"}.get(cascade, "#e0e0e0")
    return OTHER_MODES[k % len(OTHER_MODES)]


OTHER_MODES = ["#2166ac", "#4393c3", "#1b7837", "#5aae61", "#762a83", "#9970ab", "#e08214", "#fdb863"]


def failure_mode_bars(modes: pd.DataFrame) -> go.Figure:
    """Share of each backbone's failed steps per MAST failure mode and cascade flag (stacked):
    FM-5 (error propagation) red, modes the trace does not record grey."""
    fig = go.Figure()
    modes = modes.assign(series=modes["failure_mode"] + " · " + modes["cascade"])
    order = modes.groupby("series")["failed_steps"].sum().sort_values(ascending=False).index
    for k, series in enumerate(order):
        frame = modes[modes["series"] == series]
        first = frame.iloc[0]
        fig.add_trace(go.Bar(y=[esc(b) for b in frame["backbone"]], x=frame["share_pct"], name=esc(series),
                             orientation="h", customdata=frame["failed_steps"],
                             marker_color=_mode_color(first["failure_mode"], first["cascade"], k),
                             hovertemplate="%{y}: %{x:.1f}% (%{customdata:,} failed steps)<extra>" + esc(series) + "</extra>"))
    fig.update_layout(barmode="stack", height=120 + 34 * modes["backbone"].nunique(), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(range=[0, 100], ticksuffix="%", title=dict(text="% of the backbone's failed steps")),
                      yaxis=dict(autorange="reversed"), legend=dict(orientation="h", y=-0.3))
    return fig


def _pct(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for c in columns:
        out[c] = (100 * out[c].astype(float)).round(1)
    return out


def role_recall_tables(per_set: pd.DataFrame, averages: pd.DataFrame,
                       sets: pd.DataFrame) -> list[tuple[pd.DataFrame, str, str]]:
    """The recall-by-role tab's three tables as (frame, key, caption), in page order: per role
    (mean over detectors), per prediction set (one row, a column per role) and the long form.
    Shares in % with one decimal. The page and its export draw these same frames."""
    shown = averages.assign(role=averages["role"].map(lambda r: propagation.ROLE_NAMES[str(r)]))
    wide = per_set.pivot(index="set_id", columns="role", values=["recall", "delta"])
    wide.columns = [f"{propagation.ROLE_NAMES[str(role)].lower()}_{metric}" for metric, role in wide.columns]
    wide = wide.reset_index().merge(sets[["set_id", "method", "seed"]], on="set_id", how="left")
    totals = per_set.groupby("set_id", as_index=False)[["scored_steps", "flagged_steps"]].first()
    wide = wide.merge(totals, on="set_id")
    ordered = ["set_id", "method", "seed"] + [f"{r}_{m}" for r in ("origin", "mid", "down") for m in ("recall", "delta")
                                               if f"{r}_{m}" in wide.columns] + ["scored_steps", "flagged_steps"]
    shares = ["recall", "isolation_recall", "delta"]
    return [
        (_pct(shown, shares), "role-averages", "Per role, mean over detectors in % (each detector's seeds averaged first)"),
        (_pct(wide[ordered], [c for c in ordered if c.endswith(("_recall", "_delta"))]), "role-recall-per-set",
         "Per prediction set (recall and delta in %)"),
        (_pct(per_set.assign(role=per_set["role"].astype(str)), shares), "role-recall-long",
         "Per set and role, with counts"),
    ]
