"""The detector views' figures and tables: the per-action AUROC grid's heatmaps, its long form,
the overall comparison, silent vs loud, cost beside accuracy, the prediction sets.

Pure builders (no Streamlit), shared by the Detectors page and the export. Every detector,
backbone and action name is data (it may come from a release file), so Plotly labels go
through ``text.plotly``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from auditatlas.analyses import detector_comparison as dv
from auditatlas.analyses.board_intervals import fmt_interval

from . import colors
from .text import plotly as safe

# Red (worse than chance) through pale yellow (0.5) to green (1.0), one scale for every grid and
# its table.
AUC_SCALE = [[x, "#{:02x}{:02x}{:02x}".format(*rgb)] for x, rgb in colors.RED_YELLOW_GREEN]
UNDEFINED_GREY = "#d9d9d9"
PANELS_PER_ROW = 3  # at most, for few detectors; more detectors, fewer panels a row (panels_per_row)
# Side by side, panels share the page's width (about 900 px wide at 1400 px with the sidebar): a
# detector's column keeps at least this many pixels, so its cell's value reads at CELL_FONT_PX.
MIN_COLUMN_PX, PANEL_EXTRA_PX, PAGE_PX, CELL_FONT_PX = 34, 60, 900, 11
# A cell with fewer positives or negatives than this is drawn pale: its ROC-AUC moves a lot with
# one step more or less.
SMALL_N = 10
VEIL = f"rgba(255,255,255,{colors.VEIL_ALPHA})"
HOVER_LINE_CHARS = 70  # a hover's lines wrap here, so the box stays inside the chart


def auc_color(value: float, pale: bool = False) -> str:
    """CSS for a grid cell: the heatmap's scale, nothing where undefined; ``pale``: seen through
    the heatmaps' veil (a cell on few positives or negatives)."""
    return colors.background(value, colors.RED_YELLOW_GREEN, pale=pale)


def panels_per_row(n_detectors: int) -> int:
    """Panels side by side: as many as keep each detector's column readable, at most three."""
    return max(1, min(PANELS_PER_ROW, PAGE_PX // (n_detectors * MIN_COLUMN_PX + PANEL_EXTRA_PX)))


def hover_lines(*parts: str) -> str:
    """Hover text in short lines (each part escaped, then joined with <br>): one long line ran
    off the chart's edge."""
    lines: list[str] = []
    for part in parts:
        line = ""
        for word in part.split(" "):
            if line and len(line) + 1 + len(word) > HOVER_LINE_CHARS:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(safe(line) for line in lines)


def small(cell) -> bool:
    """A defined cell resting on few positives or negatives (drawn pale)."""
    return min(int(cell["n_pos_min"]), int(cell["n_neg_min"])) < SMALL_N  # the fewest over its seeds


def _short_detector(name: str, limit: int = 30) -> str:
    """Shorten from the middle: detectors of one method differ at the end (model, feature set)."""
    if len(name) <= limit:
        return name
    head = limit // 3
    return name[:head] + "…" + name[-(limit - head - 1):]


# ----------------------------------------------------------------------------- the grid

def heatmaps(grid: dv.Grid, backbones: list[str]) -> go.Figure:
    """One heatmap per backbone, side by side (wrapping as ``panels_per_row`` says), one colour
    scale. Undefined cells are grey with a dash and their reason on hover, never coloured as 0.5;
    cells on fewer than ``SMALL_N`` positives or negatives are veiled pale.
    """
    dets = list(grid.detectors["detector"])
    n = max(len(backbones), 1)
    cols = min(n, panels_per_row(len(dets)))
    rows = math.ceil(n / cols)
    n_actions = max([int((grid.actions["backbone"] == b).sum()) for b in backbones] or [1])
    # Pixels: each panel 34 per action row; below each row of panels room for the slanted
    # detector names (about 4 px of height per character at -35 degrees) and the next row's
    # titles, so rows never overlap.
    longest = max((len(_short_detector(d)) for d in dets), default=0)
    panel, gap = max(34 * n_actions + 30, 150), max(130, 4 * longest + 70)
    height = rows * panel + (rows - 1) * gap + 150
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[safe(b) for b in backbones],
                        horizontal_spacing=0.04, vertical_spacing=(gap / height) if rows > 1 else 0.0)
    # Positions, not names, on x: two detectors whose shortened names coincide stay two columns.
    x = list(range(len(dets)))
    ticktext = [safe(_short_detector(d)) for d in dets]
    for k, backbone in enumerate(backbones):
        acts = grid.actions[grid.actions["backbone"] == backbone]
        cells = grid.cells[grid.cells["backbone"] == backbone].set_index(["action", "detector"])
        y = [safe(dv.action_label(a)) for a in acts["action"]]
        z, undefined, text, hover, veil = [], [], [], [], []
        for a in acts["action"]:
            zr, ur, tr, hr, vr = [], [], [], [], []
            for d in dets:
                c = cells.loc[(a, d)] if (a, d) in cells.index else None
                if c is not None and np.isfinite(c["auc_mean"]):
                    zr.append(c["auc_mean"]); ur.append(None)
                    tr.append(f"{c['auc_mean']:.2f}")
                    few = small(c)
                    vr.append(1.0 if few else None)
                    hr.append([backbone, a, d, hover_lines(
                        f"{d} · {a}", f"ROC-AUC {dv.fmt_mean_std(c['auc_mean'], c['auc_std'])} over {c['n_defined']} set(s)",
                        _hover_interval(c), f"{c['n_pos']} positives, {c['n_neg']} negatives"
                        + (f" (fewer than {SMALL_N}: drawn pale)" if few else ""),
                        *([str(c["reason"])] if c["reason"] else []))])
                else:
                    reason = c["reason"] if c is not None else "no scored test steps"
                    zr.append(None); ur.append(0.0); vr.append(None)
                    tr.append("—")
                    hr.append([backbone, a, d, hover_lines(f"{d} · {a}", f"undefined ({reason})")])
            z.append(zr); undefined.append(ur); text.append(tr); hover.append(hr); veil.append(vr)
        r, c = divmod(k, cols)
        # Grey layer first (undefined cells), then the scores on top.
        fig.add_trace(go.Heatmap(z=undefined, x=x, y=y, text=text, texttemplate="%{text}",
                                 colorscale=[[0, UNDEFINED_GREY], [1, UNDEFINED_GREY]], showscale=False,
                                 hoverinfo="skip"), row=r + 1, col=c + 1)
        fig.add_trace(go.Heatmap(z=z, x=x, y=y, text=text, texttemplate="%{text}", textfont=dict(size=CELL_FONT_PX),
                                 colorscale=AUC_SCALE, zmin=0, zmax=1, showscale=(k == 0),
                                 colorbar=dict(title="ROC-AUC", lenmode="pixels", len=max(min(panel, 260), 120),
                                               yanchor="top", y=1),
                                 hoverinfo="skip"), row=r + 1, col=c + 1)
        # The veil over cells on few positives or negatives (their value stays readable on it).
        fig.add_trace(go.Heatmap(z=veil, x=x, y=y, colorscale=[[0, VEIL], [1, VEIL]], showscale=False,
                                 hoverinfo="skip"), row=r + 1, col=c + 1)
        # The clickable layer (heatmaps cannot be selected): one invisible square per cell, its
        # customdata the cell (backbone, action, detector) a click opens, then its hover text.
        cells_xy = [(j, label, h) for label, hr_row in zip(y, hover) for j, h in enumerate(hr_row)]
        fig.add_trace(go.Scatter(
            x=[j for j, _, _ in cells_xy], y=[label for _, label, _ in cells_xy], mode="markers",
            marker=dict(symbol="square", size=26, color="rgba(0,0,0,0)", line=dict(width=0)),
            selected=dict(marker=dict(color="rgba(30,60,160,0.35)")), unselected=dict(marker=dict(opacity=0)),
            customdata=[h for _, _, h in cells_xy], hovertemplate="%{customdata[3]}<extra></extra>",
            showlegend=False), row=r + 1, col=c + 1)
        fig.update_yaxes(autorange="reversed", row=r + 1, col=c + 1, showticklabels=(c == 0), ticks="")
        fig.update_xaxes(tickvals=x, ticktext=ticktext, row=r + 1, col=c + 1)
    # Room for every slanted detector name and action label, whatever their length.
    fig.update_xaxes(tickangle=-35, automargin=True)
    fig.update_yaxes(automargin=True)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10),
                      hoverlabel=dict(align="left", font=dict(size=12)))
    return fig


def heatmap_cell(point: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """The (backbone, action, detector) of a clicked point of ``heatmaps`` (its customdata, as
    the propagation heatmap's); None for a point that is no cell."""
    data = point.get("customdata") if hasattr(point, "get") else None
    if isinstance(data, (list, tuple)) and len(data) >= 3:
        return str(data[0]), str(data[1]), str(data[2])
    return None


def _hover_interval(cell) -> str:
    """'95% interval [0.61, 0.80] (span of 5 seeds' intervals), clustered by run (Obuchowski 1997)',
    or why there is none."""
    ci = fmt_interval(cell["ci_low"], cell["ci_high"])
    if not ci:
        return f"no 95% interval ({cell['ci_reason']})"
    return f"95% interval {ci} ({cell['ci_of']}), {dv.INTERVAL_METHOD}"


def long_cells(grid: dv.Grid) -> pd.DataFrame:
    """The grid in long form for download: one row per backbone, action, detector."""
    frame = grid.cells.merge(grid.actions[["backbone", "action", "success_rate", "labeled_steps"]],
                             on=["backbone", "action"], how="left")
    frame["success_rate"] = (100 * frame["success_rate"]).round(1)
    frame["ci_method"] = np.where(np.isfinite(frame["ci_low"].astype(float)), dv.INTERVAL_METHOD, "")
    return frame[["backbone", "action", "success_rate", "labeled_steps", "detector", "auc_mean", "auc_std",
                  "ci_low", "ci_high", "ci_of", "ci_method", "ci_reason", "n_seeds", "n_defined", "n_pos", "n_neg",
                  "reason"]].round({"auc_mean": 4, "auc_std": 4, "ci_low": 4, "ci_high": 4}).rename(
        columns={"success_rate": "success rate %", "auc_mean": "ROC-AUC mean", "auc_std": "ROC-AUC std",
                 "ci_low": "95% low", "ci_high": "95% high", "ci_of": "95% interval of",
                 "ci_method": "95% interval method", "ci_reason": "no interval because",
                 "n_seeds": "sets", "n_defined": "sets defined", "n_pos": "positives per set",
                 "n_neg": "negatives per set", "reason": "undefined because"})


def long_means(grid: dv.Grid) -> pd.DataFrame:
    """The grid's means for download: per backbone, each detector's mean over actions (the
    bottom row) and each action's mean over detectors (the right column), with their intervals."""
    parts = [grid.detector_means.assign(**{"mean over": "actions"}).rename(columns={"detector": "of"}),
             grid.action_means.assign(**{"mean over": "detectors"}).rename(columns={"action": "of"})]
    frame = pd.concat([p for p in parts if not p.empty] or [parts[0]], ignore_index=True)
    frame["ci_method"] = np.where(np.isfinite(frame["ci_low"].astype(float)), dv.MEAN_INTERVAL_METHOD, "")
    return frame[["backbone", "mean over", "of", "mean", "n_cells", "ci_low", "ci_high", "ci_method", "ci_reason",
                  "n_runs"]].astype({"mean": float, "ci_low": float, "ci_high": float}).round(
        {"mean": 4, "ci_low": 4, "ci_high": 4}).rename(
        columns={"of": "detector or action", "mean": "ROC-AUC mean", "n_cells": "cells", "ci_low": "95% low",
                 "ci_high": "95% high", "ci_method": "95% interval method", "ci_reason": "no interval because",
                 "n_runs": "runs"})


# ----------------------------------------------------------------------------- overall comparison

def overall_chart(per_detector: pd.DataFrame, metric: str = "auc") -> go.Figure:
    """Mean ± std over seeds of one metric per detector, grouped by supervision, coloured by
    family; the random baseline as a dashed line."""
    frame = per_detector[np.isfinite(per_detector[f"{metric}_mean"].astype(float))]
    fig = go.Figure()
    palette = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#eeca3b", "#9d755d"]
    families = sorted(frame["family"].astype(str).unique())
    for i, family in enumerate(families):
        g = frame[frame["family"].astype(str) == family]
        fig.add_trace(go.Bar(
            x=[[safe(s) for s in g["supervision"]], [safe(_short_detector(d, 34)) for d in g["detector"]]],
            y=g[f"{metric}_mean"],
            error_y=dict(type="data", array=g[f"{metric}_std"].fillna(0), visible=True),
            name=safe(family), marker_color="#9e9e9e" if family == "random" else palette[i % len(palette)],
            customdata=[safe(f"{d}: {dv.fmt_mean_std(m, s)} over {n} set(s)"
                             + (f"; 95% interval {fmt_interval(lo, hi)} ({of})" if metric == "auc" and of else ""))
                        for d, m, s, n, lo, hi, of
                        in zip(g["detector"], g[f"{metric}_mean"], g[f"{metric}_std"], g[f"{metric}_n"],
                               g["auc_ci_low"], g["auc_ci_high"], g["auc_ci_of"])],
            hovertemplate="%{customdata}<extra></extra>",
        ))
    rnd = frame[frame["is_random"]]
    if len(rnd):
        fig.add_hline(y=float(rnd[f"{metric}_mean"].iloc[0]), line_dash="dash", line_color="#555",
                      annotation_text="random", annotation_position="top left")
    fig.update_layout(barmode="group", height=440, yaxis_title=dv.METRIC_LABELS[metric], yaxis_range=[0, 1.05],
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(title="family", orientation="h", y=1.08, x=0))
    return fig


def overall_frame(per_detector: pd.DataFrame) -> pd.DataFrame:
    """The comparison as a table: mean ± std of each metric, the test vs random, the counts."""
    out = per_detector[["supervision", "family", "detector"]].copy()
    text = {m: [dv.fmt_mean_std(a, b) for a, b in zip(per_detector[f"{m}_mean"], per_detector[f"{m}_std"])]
            for m in dv.METRICS}
    out["ROC-AUC"] = text["auc"]
    out["ROC-AUC 95%"] = [fmt_interval(lo, hi) for lo, hi in zip(per_detector["auc_ci_low"], per_detector["auc_ci_high"])]
    out["interval of"] = per_detector["auc_ci_of"]
    out["p vs random (one-tailed)"] = per_detector["vs_random_p"].map(lambda p: "" if not np.isfinite(p) else f"{p:.3g}")
    out["test"] = np.where(per_detector["vs_random_test"] != "", per_detector["vs_random_test"], per_detector["vs_random_note"])
    for m in dv.METRICS[1:]:
        out[dv.METRIC_LABELS[m]] = text[m]
    out["test steps"] = per_detector["test_steps"]
    out["anomalies"] = per_detector["positives"]
    out["silent / loud anomalies"] = per_detector["silent_anomalies"] + " / " + per_detector["loud_anomalies"]
    out["test runs"] = per_detector["test_runs"]
    out["threshold"] = per_detector["threshold"]
    out["sets"] = per_detector["n_sets"]
    out["seeds"] = per_detector["seeds"]
    out["origin"] = per_detector["origin"]
    out["test note"] = per_detector["vs_random_note"]
    out["ROC-AUC mean"] = per_detector["auc_mean"].round(4)
    out["ROC-AUC 95% low"], out["ROC-AUC 95% high"] = per_detector["auc_ci_low"].round(4), per_detector["auc_ci_high"].round(4)
    return out


def silent_loud_chart(per_detector: pd.DataFrame) -> go.Figure:
    """Recall on silent anomalies (their scope still succeeded) beside recall on loud ones."""
    fig = go.Figure()
    names = [safe(_short_detector(d, 34)) for d in per_detector["detector"]]
    for metric, label, color in (("silent_recall", "silent (scope succeeded)", "#b279a2"),
                                 ("loud_recall", "loud (scope failed)", "#4c78a8")):
        fig.add_trace(go.Bar(
            x=names, y=per_detector[f"{metric}_mean"], name=label, marker_color=color,
            error_y=dict(type="data", array=per_detector[f"{metric}_std"].fillna(0), visible=True),
            customdata=[safe(f"{d}: {dv.fmt_mean_std(m, s) or 'undefined (no such anomalies)'}") for d, m, s
                        in zip(per_detector["detector"], per_detector[f"{metric}_mean"], per_detector[f"{metric}_std"])],
            hovertemplate="%{customdata}<extra></extra>"))
    fig.update_layout(barmode="group", height=360, yaxis_title="recall at the threshold", yaxis_range=[0, 1.05],
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.1, x=0))
    return fig


def per_set_frame(per_set: pd.DataFrame) -> pd.DataFrame:
    cols = ["detector", "set_id", "seed", "origin", "n_steps", "n_runs", "n_pos", "n_neg", "auc", "auc_low", "auc_high",
            "interval_reason", "f1", "accuracy",
            "balanced_accuracy", "tp", "fp", "tn", "fn", "silent_pos", "silent_tp", "silent_recall", "loud_pos",
            "loud_tp", "loud_recall", "unknown_scope_pos", "threshold_used"]
    return per_set[cols].round(4)


# ----------------------------------------------------------------------------- cost

def cost_chart(cost: pd.DataFrame) -> go.Figure:
    """ROC-AUC against fit + score time, and against peak memory, for detectors that record
    them (log x: costs span orders of magnitude)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["fit + score time (s)", "peak memory (MB)"],
                        horizontal_spacing=0.08, shared_yaxes=True)
    for col, x in ((1, "seconds_mean"), (2, "peak_memory_mb_mean")):
        g = cost[np.isfinite(cost[x].astype(float)) & np.isfinite(cost["auc_mean"].astype(float))]
        fig.add_trace(go.Scatter(
            x=g[x], y=g["auc_mean"], mode="markers+text", text=[safe(_short_detector(d, 24)) for d in g["detector"]],
            textposition="middle right", marker=dict(size=11, color="#4c78a8"), showlegend=False, cliponaxis=False,
            error_y=dict(type="data", array=g["auc_std"].fillna(0), visible=True),
            customdata=[safe(f"{d}: ROC-AUC {dv.fmt_mean_std(a, s)}, {v:.3g}") for d, a, s, v
                        in zip(g["detector"], g["auc_mean"], g["auc_std"], g[x])],
            hovertemplate="%{customdata}<extra></extra>",
        ), row=1, col=col)
        if len(g) and (g[x] > 0).all():
            # Log x (costs span orders of magnitude), padded so the end labels stay inside.
            lo, hi = np.log10(g[x].min()), np.log10(g[x].max())
            pad = max(0.25 * (hi - lo), 0.15)
            fig.update_xaxes(type="log", range=[lo - pad, hi + pad], row=1, col=col)
        elif len(g):
            # A recorded 0 (a job that did not grow) has no place on a log axis: linear here.
            lo, hi = float(g[x].min()), float(g[x].max())
            pad = max(0.15 * (hi - lo), 0.05 * max(abs(hi), 1.0))
            fig.update_xaxes(range=[lo - pad, hi + pad], row=1, col=col)
    fig.update_yaxes(title_text="ROC-AUC (mean over seeds)", row=1, col=1)
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def cost_frame(cost: pd.DataFrame) -> pd.DataFrame:
    out = cost.copy()
    out["ROC-AUC"] = [dv.fmt_mean_std(a, s) for a, s in zip(cost["auc_mean"], cost["auc_std"])]
    out = out.rename(columns={"seconds_mean": "fit + score s", "fit_seconds_mean": "fit s", "score_seconds_mean": "score s",
                              "peak_memory_mb_mean": "peak memory MB", "sets_with_provenance": "sets with provenance",
                              "n_sets": "sets", "reason": "blank because"})
    return out[["detector", "family", "supervision", "origin", "ROC-AUC", "blank because", "fit + score s", "fit s",
                "score s", "peak memory MB", "sets with provenance", "sets"]].round(3)


def sets_frame(sets: pd.DataFrame) -> pd.DataFrame:
    """The prediction sets, each by its label first (``set_labels``), its id last, to copy."""
    from ..set_labels import set_labels

    out = sets[["set_id", "detector", "granularity", "origin", "family", "supervision", "seed", "n_predictions",
                "n_test_predictions", "n_test_unscored", "source_file", "created_at", "shown", "not_shown"]].copy()
    out["shown"] = np.where(out["shown"], "yes", "no: " + out["not_shown"])
    names = set_labels(sets.to_dict("records"))
    out.insert(0, "prediction set", [names[str(s)] for s in out["set_id"]])
    return out[[c for c in out.columns if c not in ("set_id", "not_shown")] + ["set_id"]]


def cell_error_rows(errors: pd.DataFrame, kind: str) -> pd.DataFrame:
    """A cell's errors of one ``kind`` ("false positive" / "false negative") as the Detectors page
    lists them and its export writes them: position, the Explorer link, the step and its scores."""
    rows = errors[errors["kind"] == kind]
    return rows[["position", "explorer", "run_id", "step_idx", "step_id", "agent", "backbone", "action", "score",
                 "label", "pred_label", "scope_success"]].rename(columns={"position": "#", "step_idx": "step"})
