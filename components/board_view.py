"""Draw one recomputed board: floor, items, rows in bands, contrasts, published vs recomputed."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from components.safe import md, plotly as plotly_text
from components.tables import csv_safe, file_name, table

ROLE_LABEL = {"floor": "floor", "baseline": "baseline", "entrant": "entrant", "extra": "extra (not a board row)"}


def rows_frame(result) -> pd.DataFrame:
    """Board rows in band order: only a row a Holm-adjusted contrast separates is ordered."""
    from auditatlas.analyses.board_registry import bands

    verdicts: dict[str, list[str]] = {}
    for c in result.contrasts:
        verdicts.setdefault(c.a_name, []).append(f"{c.family}: {c.verdict}")
    by_name = {r.entrant: r for r in result.rows}
    records = []
    for placed in bands(result):
        r = by_name[placed["entrant"]]
        rec = {"entrant": r.entrant, "role": ROLE_LABEL.get(r.role, r.role), "band": placed["band"]}
        rec.update({m: r.metrics.get(m) for m in result.metrics})
        rec["items"] = r.n_items
        rec["contrasts"] = "; ".join(verdicts.get(r.entrant, []))
        records.append(rec)
    return pd.DataFrame(records)


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


STATUS_COLOR = {"match": "#d8f3dc", "differs": "#ffd6d6"}


def _status_color(row: pd.Series) -> list[str]:
    color = STATUS_COLOR.get(row.get("status"), "#eeeeee")
    return [f"background-color: {color}"] * len(row)


def draw(result, cells, key: str) -> None:
    st.markdown(f"**{md(result.title)}** on {md(result.corpus)}: rests on **{result.n_items:,} {md(result.item_kind)}**. "
                f"Floor: **{md(result.floor)}**.")
    floor = next((r for r in result.rows if r.entrant == result.floor), None)
    if floor:
        st.caption("Floor " + ", ".join(f"{md(m)} {md(_fmt(floor.metrics.get(m)))}" for m in result.metrics))
    frame = rows_frame(result)
    if "t2d" in frame:
        frame["t2d"] = frame["t2d"].map(lambda v: "never (>100%)" if v is None or v != v else f"{v:.0f}%")
    table(frame.round(3), f"{key}-rows")
    for note in result.notes:
        st.caption(md(note))
    for name, rows in result.extra_tables.items():
        st.markdown(f"*{md(name.replace('_', ' '))}*")
        table(pd.DataFrame(rows).round(3), f"{key}-{name}")
    if result.contrasts:
        with st.expander(f"Paired contrasts ({len(result.contrasts)}, Holm-adjusted within each family)"):
            table(contrasts_frame(result), f"{key}-contrasts")
    if cells:
        pub = published_frame(cells)
        n_ok = int((pub["status"] == "match").sum())
        n_cmp = int(pub["status"].isin(["match", "differs"]).sum())
        absent = sorted(pub.loc[~pub["status"].isin(["match", "differs"]), "entrant"].unique())
        st.markdown(f"**Published vs recomputed:** {n_ok} of {n_cmp} recomputable cells within 0.0005 (green)."
                    + (f" Not recomputable here (no predictions of theirs in the store): {', '.join(md(a) for a in absent)}." if absent else ""))
        st.dataframe(pub.style.apply(_status_color, axis=1).format({"published": "{:.3f}", "recomputed": "{:.3f}", "delta": "{:+.4f}"}, na_rep="—"),
                     hide_index=True, key=f"table-{key}-published")
        st.download_button("Download CSV", csv_safe(pub).to_csv(index=False).encode(), file_name=file_name(f"{key}-published"),
                           mime="text/csv", key=f"csv-{key}-published")


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def live_chart(result) -> None:
    """ROC-AUC trajectories over prefixes, with the 0.70 early-warning bar."""
    import plotly.graph_objects as go

    prefixes = [m for m in result.metrics if m.startswith("auc@")]
    xs = [int(m.split("@")[1]) for m in prefixes]
    fig = go.Figure()
    for row in result.rows:
        ys = [row.metrics.get(m) for m in prefixes]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=plotly_text(row.entrant),
                                 line=dict(dash="dot" if row.role == "floor" else "solid")))
    fig.add_hline(y=0.70, line_dash="dash", line_color="grey", annotation_text="0.70 early-warning bar")
    fig.update_layout(xaxis_title="prefix of the run's steps (%)", yaxis_title="ROC-AUC", yaxis_range=[0.3, 1.0],
                      height=420, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    fig.update_xaxes(tickvals=xs, ticktext=[f"{x}%" for x in xs])
    st.plotly_chart(fig, key=f"live-{result.corpus}")
