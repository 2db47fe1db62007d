"""A recomputed board's tables and its LIVE chart: the lines in band order (as shown and as
downloaded), the paired contrasts, published vs recomputed, the ROC-AUC over prefixes.

Pure builders (no Streamlit), shared by the Boards page and the export.
"""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from ..analyses.board_intervals import fmt as interval_fmt
from .text import plotly as plotly_text

ROLE_LABEL = {"floor": "floor", "baseline": "baseline", "entrant": "entrant", "extra": "extra (not a board row)"}
STATUS_COLOR = {"match": "#d8f3dc", "differs": "#ffd6d6"}


def rows_frame(result, per_seed: bool = False, cells=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The board's lines in band order (``board_seeds.entries``), as shown and as downloaded.

    A re-scored detector's seeds are one line (mean ± sd (min–max) over seeds, as text) unless
    ``per_seed``; the download keeps numbers: the mean, sd, min and max of each metric. ``top``
    says which lines are in the board's top group (a seed group: how many of its seeds are);
    ``cells``, the published values the board checks, go beside the values they check.
    """
    from auditatlas.analyses.board_seeds import contrasts_text, entries, top_share

    lines = entries(result, group=not per_seed)
    published = {(c.entrant, c.metric): c.published for c in cells}
    grouped = any(e.is_group for e in lines)
    # Metrics with an interval method (t2d has none: a threshold crossing is not an estimate).
    methods = {m for m, how in result.interval_methods.items() if not how.startswith("none")}
    families = list(result.family_labels)
    shown, download = [], []
    for e in lines:
        top = top_share(result, e)
        rec = {"entrant": e.entrant, "top group": top, "band": e.band, "contrasts": contrasts_text(e, families)}
        csv = {"entrant": e.entrant, "top group": top, "seeds": _seeds(e.seeds), "band": e.band}
        for m in result.metrics:
            spread = e.spreads.get(m)
            value = e.metrics.get(m)
            interval = e.intervals.get(m)
            rec[m] = (spread.text(with_range=False) if spread else fmt(value, blank="")) if grouped else value
            if (e.entrant, m) in published or any(k[1] == m for k in published):
                # Shown as text ("—" where the release gives this line none); the CSV keeps the number.
                csv[f"{m} published"] = published.get((e.entrant, m))
                rec[f"{m} published"] = fmt(csv[f"{m} published"])
            if m in methods:
                rec[f"{m} 95%"] = interval_fmt(interval)
            csv[m] = spread.mean if spread else value
            if m in methods:
                csv.update({f"{m} 95% low": interval[0] if interval else None,
                            f"{m} 95% high": interval[1] if interval else None})
            if grouped:
                csv.update({f"{m} sd": spread.sd if spread else None, f"{m} min": spread.low if spread else None,
                            f"{m} max": spread.high if spread else None})
        if grouped:  # the ranges after the means: the means are what a reader compares first
            for m in result.metrics:
                spread = e.spreads.get(m)
                rec[f"{m} min–max"] = spread.range_text() if spread else ""
        rec["seeds"] = csv["seeds"]
        rec["items"] = csv["items"] = e.items
        rec["role"] = csv["role"] = ROLE_LABEL.get(e.role, e.role)
        csv["contrasts"] = rec["contrasts"]
        csv["seed rows"] = "; ".join(e.members) or (e.row if e.row != e.entrant else "")
        shown.append(rec)
        download.append(csv)
    return pd.DataFrame(shown), pd.DataFrame(download)


def interval_caption(result, grouped: bool) -> str:
    """One line: how each metric's 95% interval is made, and what a seed group's means."""
    if not result.interval_methods:
        return ""
    by_method: dict[str, list[str]] = {}
    for metric, how in result.interval_methods.items():
        by_method.setdefault(how, []).append(metric)
    parts = [f"{', '.join(ms)}: {how}" for how, ms in by_method.items()]
    text = "95% intervals (columns '… 95%'; blank where undefined or for an analytic expectation): " + "; ".join(parts) + "."
    if grouped:
        from auditatlas.analyses.board_intervals import SEED_SPAN

        text += f" For {SEED_SPAN}."
    return text


def _seeds(seeds: tuple[int, ...]) -> str:
    """'0–4' for consecutive seeds, '0, 2, 5' otherwise, '' for a row without a seed."""
    if not seeds:
        return ""
    if len(seeds) > 1 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


LOW, HIGH = " 95% low", " 95% high"


def extra_frame(rows: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An extra table (e.g. PRE's F1 by source) as shown and as downloaded: each column's
    ``… 95% low`` / ``… 95% high`` pair becomes one ``… 95%`` text cell beside it on screen,
    numbers rounded to 3; the download keeps every bound as a number."""
    download = pd.DataFrame(rows)
    shown: dict[str, list] = {}
    for col in download.columns:
        if col.endswith((LOW, HIGH)):
            continue
        values = download[col]
        shown[col] = values.round(3).tolist() if pd.api.types.is_float_dtype(values) else values.tolist()
        if f"{col}{LOW}" in download.columns:
            pairs = zip(download[f"{col}{LOW}"], download[f"{col}{HIGH}"])
            shown[f"{col} 95%"] = [interval_fmt([lo, hi]) if _finite(lo) and _finite(hi) else "" for lo, hi in pairs]
    return pd.DataFrame(shown), download


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def contrasts_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{
        "family": c.family, "A": c.a_name, "B": c.b_name, "A value": c.a_value, "B value": c.b_value,
        "A-B": c.diff, "95% low": c.ci_low, "95% high": c.ci_high, "p": c.p, "p (Holm)": c.p_adj,
        "verdict": c.verdict, "test": c.test,
    } for c in result.contrasts])


def published_frame(cells) -> pd.DataFrame:
    frame = pd.DataFrame([{
        "corpus": c.corpus, "entrant": c.entrant, "metric": c.metric, "published": c.published,
        "recomputed": c.recomputed, "delta": c.delta, "status": c.status,
    } for c in cells])
    # Differences first: they are what a reviewer must see; then matches; then the cells
    # whose entrant has no predictions in the store.
    order = frame["status"].map(lambda s: 0 if s == "differs" else (1 if s == "match" else 2))
    return frame.assign(_o=order).sort_values(["_o", "entrant", "metric"]).drop(columns="_o")


def shown_rows(result, per_seed: bool = False, cells=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``rows_frame`` as the page and the export show it: time-to-detect as text, numbers to
    three places (the download keeps them whole)."""
    frame, download = rows_frame(result, per_seed, cells)
    if "t2d" in frame:
        frame["t2d"] = frame["t2d"].map(t2d)
    numeric = frame.select_dtypes("number").columns
    frame[numeric] = frame[numeric].round(3)
    return frame, download


def fmt(v, blank: str = "—") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return blank
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def t2d(v) -> str:
    if isinstance(v, str):
        return v
    return "never (>100%)" if v is None or v != v else f"{v:.0f}%"


def live_figure(result) -> go.Figure:
    """ROC-AUC trajectories over prefixes, with the 0.70 early-warning bar."""
    prefixes = [m for m in result.metrics if m.startswith("auc@")]
    xs = [int(m.split("@")[1]) for m in prefixes]
    fig = go.Figure()
    for row in result.rows:
        ys = [row.metrics.get(m) for m in prefixes]
        hover = [plotly_text(f"{row.entrant} at {x}%: ROC-AUC {fmt(y)}"
                             + (f", 95% interval {interval_fmt(row.intervals.get(m))} "
                                f"({result.interval_methods.get(m, '')})" if row.intervals.get(m) else ", no interval"))
                 for x, y, m in zip(xs, ys, prefixes)]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=plotly_text(row.entrant),
                                 line=dict(dash="dot" if row.role == "floor" else "solid"),
                                 customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    fig.add_hline(y=0.70, line_dash="dash", line_color="grey", annotation_text="0.70 early-warning bar")
    fig.update_layout(xaxis_title="prefix of the run's steps (%)", yaxis_title="ROC-AUC", yaxis_range=[0.3, 1.0],
                      height=420, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    fig.update_xaxes(tickvals=xs, ticktext=[f"{x}%" for x in xs])
    return fig
