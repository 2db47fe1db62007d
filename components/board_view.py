"""Draw one recomputed board: floor, items, rows in bands, contrasts, published vs recomputed."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from auditatlas.figures.boards import (  # noqa: F401 - rows_frame re-exported
    STATUS_COLOR,
    contrasts_frame,
    extra_frame,
    interval_caption,
    live_figure,
    published_frame,
    rows_frame,
    shown_rows,
)
from auditatlas.figures.boards import fmt as _fmt
from components.safe import md
from components.tables import csv_safe, file_name, table


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
    frame, download = shown_rows(result, per_seed)
    if any(r.seed_group for r in result.rows) and not per_seed:
        st.caption(f"A re-scored detector's seeds are one entrant: mean ± {SD_WORDS}, and their min–max; its "
                   "contrasts say in how many seeds the seed's own contrast separates (4/5). Released prediction sets "
                   "keep their own rows. Turn on *Every seed on its own row* for the seeds' rows.")
    table(frame, f"{key}-rows", download=download, column_config=_row_columns(result))
    caption = interval_caption(result, grouped=any(r.seed_group for r in result.rows) and not per_seed)
    if caption:
        st.caption(md(caption))
    for note in result.notes:
        st.caption(md(note))
    _coverage(result, key)
    for name, rows in result.extra_tables.items():
        st.markdown(f"*{md(name.replace('_', ' '))}*")
        shown, download = extra_frame(rows)
        table(shown, f"{key}-{name}", caption=result.extra_captions.get(name), download=download)
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
    st.plotly_chart(live_figure(result), key=f"live-{result.corpus}")
