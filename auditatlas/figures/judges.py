"""The judges' strip of one run (pure builders, shared by the Explorer and the export): which step each judge (or detector) picked, against the human one.

One row per step-level prediction set of the run's corpus, grouped by protocol then model; the
x axis is the run's steps. A judge's pick is its released ``top`` when it has one, else the
step it ranks first. A judge that abstained (no top, empty ranking) sits in the "abstained"
column, one with no verdict on this run in "no verdict": neither is drawn on a step, because
the ranking view would score such a run earliest-first and that is not a choice the judge made.
"""
from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from .text import plotly as esc

ABSTAINED, NO_VERDICT = "abstained", "no verdict"
HIT, MISS = "picked the human decisive step", "picked another step"
COLORS = {HIT: "#1a7f37", MISS: "#cf222e", ABSTAINED: "#8c959f", NO_VERDICT: "#d0d7de"}
SYMBOLS = {HIT: "circle", MISS: "x", ABSTAINED: "circle-open", NO_VERDICT: "line-ew-open"}


def _int(v: Any) -> int | None:
    if v is None:
        return None
    try:
        if v != v:
            return None
    except (TypeError, ValueError):
        return None
    return int(v)


def verdicts(judges: pd.DataFrame, decisive: int | None) -> pd.DataFrame:
    """One row per set: protocol, model, pick (or None) and what it is (hit/miss/abstained/no verdict)."""
    rows = []
    for r in judges.to_dict("records"):
        top, first = _int(r.get("top")), _int(r.get("first_step"))
        released = bool(r.get("released_ranking"))
        length = _int(r.get("ranking_length")) or 0
        if released and top is None and length == 0:
            pick, status = None, ABSTAINED
        elif released:
            pick = top if top is not None else first
            status = None
        elif first is not None:
            pick, status = first, None
        else:
            pick, status = None, NO_VERDICT
        if status is None:
            status = HIT if decisive is not None and pick == decisive else MISS
        rows.append({
            "protocol": r.get("protocol") or "—",
            "model": r.get("model") or r.get("method") or "—",
            "set_id": r["set_id"],
            "pick": pick,
            "verdict": status,
            "top given": top is not None if released else None,
        })
    return pd.DataFrame(rows, columns=["protocol", "model", "set_id", "pick", "verdict", "top given"])


def figure(frame: pd.DataFrame, n_steps: int, decisive: int | None) -> go.Figure:
    """The strip: x = steps (plus the abstained / no-verdict columns), one row per set."""
    rows = [f"{p} · {m}" for p, m in zip(frame["protocol"], frame["model"])]
    labels = [esc(r) for r in rows]
    y = list(range(len(rows)))
    x_abst, x_none = -2, -1
    fig = go.Figure()
    if decisive is not None:
        fig.add_vrect(x0=decisive - 0.45, x1=decisive + 0.45, fillcolor="#ffd33d", opacity=0.45, line_width=0,
                      annotation_text="human decisive step", annotation_position="top")
    for status in (HIT, MISS, ABSTAINED, NO_VERDICT):
        mask = frame["verdict"] == status
        if not mask.any():
            continue
        xs = [(x_abst if status == ABSTAINED else x_none if status == NO_VERDICT else int(p))
              for p in frame.loc[mask, "pick"]]
        ys = [yy for yy, m in zip(y, mask) if m]
        hover = [f"{labels[i]}<br>{status}" + (f": step {xs[k]}" if xs[k] >= 0 else "")
                 for k, i in enumerate(ys)]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=status, hovertext=hover, hoverinfo="text",
                                 marker=dict(color=COLORS[status], symbol=SYMBOLS[status], size=11,
                                             line=dict(width=2, color=COLORS[status]))))
    # Lines between protocol groups so each protocol reads as a block.
    protocols = list(frame["protocol"])
    for i in range(1, len(protocols)):
        if protocols[i] != protocols[i - 1]:
            fig.add_hline(y=i - 0.5, line_width=1, line_color="#57606a")
    # Every step gets a tick on a short run; a long one gets about twenty (a tick per step on a
    # thousand-step run costs the browser seconds of label layout).
    every = _tick_step(n_steps)
    steps = list(range(0, n_steps, every))
    fig.update_xaxes(tickvals=[x_abst, x_none] + steps, ticktext=["abstained", "no verdict"] + [str(i) for i in steps],
                     range=[x_abst - 0.6, max(n_steps - 0.4, 0.6)], title="step", showgrid=every == 1,
                     gridcolor="#eeeeee", tickangle=0)
    fig.update_yaxes(tickvals=y, ticktext=labels, autorange="reversed", showgrid=True, gridcolor="#f3f3f3")
    fig.update_layout(height=90 + 19 * max(len(rows), 1), margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0), plot_bgcolor="#ffffff")
    return fig


def _tick_step(n_steps: int) -> int:
    """1 up to 40 steps, else the smallest of 5, 10, 25, 50, 100, 250, … giving at most 20 ticks."""
    if n_steps <= 40:
        return 1
    scale = 1
    while True:
        for base in (5, 10, 25):
            if n_steps / (base * scale) <= 20:
                return base * scale
        scale *= 10
