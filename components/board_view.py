"""Draw one recomputed board: floor, items, rows in bands, contrasts, published vs recomputed."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from components.safe import md, plotly as plotly_text
from components.tables import csv_safe, file_name, table

ROLE_LABEL = {"floor": "floor", "baseline": "baseline", "entrant": "entrant", "extra": "extra (not a board row)"}


def rows_frame(result, per_seed: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The board's lines in band order (``board_seeds.entries``), as shown and as downloaded.

    A re-scored detector's seeds are one line (mean ± sd (min–max) over seeds, as text) unless
    ``per_seed``; the download keeps numbers: the mean, sd, min and max of each metric.
    """
    from auditatlas.analyses.board_seeds import contrasts_text, entries

    lines = entries(result, group=not per_seed)
    grouped = any(e.is_group for e in lines)
    families = list(result.family_labels)
    shown, download = [], []
    for e in lines:
        rec = {"entrant": e.entrant, "band": e.band, "contrasts": contrasts_text(e, families)}
        csv = {"entrant": e.entrant, "seeds": _seeds(e.seeds), "band": e.band}
        for m in result.metrics:
            spread = e.spreads.get(m)
            value = e.metrics.get(m)
            rec[m] = (spread.text(with_range=False) if spread else _fmt(value, blank="")) if grouped else value
            csv[m] = spread.mean if spread else value
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
        csv["seed rows"] = "; ".join(e.members)
        shown.append(rec)
        download.append(csv)
    return pd.DataFrame(shown), pd.DataFrame(download)


def _seeds(seeds: tuple[int, ...]) -> str:
    """'0–4' for consecutive seeds, '0, 2, 5' otherwise, '' for a row without a seed."""
    if not seeds:
        return ""
    if len(seeds) > 1 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


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


def draw(result, cells, key: str, per_seed: bool = False) -> None:
    from auditatlas.analyses.board_seeds import SD_WORDS

    st.markdown(f"**{md(result.title)}** on {md(result.corpus)}: rests on **{result.n_items:,} {md(result.item_kind)}**. "
                f"Floor: **{md(result.floor)}**.")
    floor = next((r for r in result.rows if r.entrant == result.floor), None)
    if floor:
        st.caption("Floor " + ", ".join(f"{md(m)} {md(_fmt(floor.metrics.get(m)))}" for m in result.metrics))
    frame, download = rows_frame(result, per_seed)
    if "t2d" in frame:
        frame["t2d"] = frame["t2d"].map(_t2d)
    numeric = frame.select_dtypes("number").columns
    frame[numeric] = frame[numeric].round(3)
    if any(r.seed_group for r in result.rows) and not per_seed:
        st.caption(f"A re-scored detector's seeds are one entrant: mean ± {SD_WORDS}, and their min–max; its "
                   "contrasts say in how many seeds the seed's own contrast separates (4/5). Released prediction sets "
                   "keep their own rows. Turn on *Every seed on its own row* for the seeds' rows.")
    table(frame, f"{key}-rows", download=download, column_config=_row_columns(result))
    for note in result.notes:
        st.caption(md(note))
    _coverage(result, key)
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


def _fmt(v, blank: str = "—") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return blank
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _t2d(v) -> str:
    if isinstance(v, str):
        return v
    return "never (>100%)" if v is None or v != v else f"{v:.0f}%"


def _row_columns(result) -> dict:
    """Widths that keep a board line on the page: names and contrasts wide, counts narrow."""
    text = st.column_config.TextColumn
    labels = result.family_labels
    title = "contrasts: " + " · ".join(labels.values()) if labels else "contrasts"
    names = "; ".join(f"{short}: {name}" for name, short in labels.items())
    return {"entrant": text("entrant", width="medium", pinned=True),
            "contrasts": text(title, help=f"Holm-adjusted paired contrasts, one verdict per family ({names}); "
                                          "a seed group counts its seeds that separate"),
            "seeds": text("seeds", width="small"),
            "items": text("items", width="small")}


def _coverage(result, key: str) -> None:
    """Entrants scoring only part of the items: one line, the list on demand."""
    from auditatlas.analyses.board_seeds import coverage_line

    if not result.coverage:
        return
    st.caption(md(coverage_line(result.coverage, result.item_kind)))
    with st.expander(f"Which prediction sets, and how many {result.item_kind} each scores ({len(result.coverage)})"):
        table(pd.DataFrame([{"prediction set": c.entrant, "scores": c.scored, "of": c.of,
                             "origin": "re-scored" if c.rescored else "released"} for c in result.coverage]),
              f"{key}-coverage")


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
