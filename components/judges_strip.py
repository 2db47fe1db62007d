"""The judges' strip of one run: which step each judge (or detector) picked, against the human one.

One row per step-level prediction set of the run's corpus, grouped by protocol then model; the
x axis is the run's steps. A judge's pick is its released ``top`` when it has one, else the
step it ranks first. A judge that abstained (no top, empty ranking) sits in the "abstained"
column, one with no verdict on this run in "no verdict": neither is drawn on a step, because
the ranking view would score such a run earliest-first and that is not a choice the judge made.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from auditatlas.figures.judges import ABSTAINED, HIT, NO_VERDICT, figure, verdicts  # noqa: F401 - shared with the export


def draw(judges: pd.DataFrame, n_steps: int, decisive: int | None, key: str) -> pd.DataFrame:
    """Draw the strip and its table; returns the verdicts frame."""
    frame = verdicts(judges, decisive)
    if frame.empty:
        st.info("No prediction set in the store scores this run's corpus at step level.")
        return frame
    counts = frame["verdict"].value_counts()
    parts = [f"{len(frame)} prediction sets"]
    if decisive is not None:
        parts.append(f"{int(counts.get(HIT, 0))} picked the human decisive step (step {decisive})")
    else:
        parts.append("this run has no human decisive step")
    if counts.get(ABSTAINED):
        parts.append(f"{int(counts[ABSTAINED])} abstained")
    if counts.get(NO_VERDICT):
        parts.append(f"{int(counts[NO_VERDICT])} have no verdict on this run")
    st.caption("; ".join(parts) + ". A pick is the judge's released top step, or the step it ranks first.")
    st.plotly_chart(figure(frame, n_steps, decisive), key=f"{key}-strip")
    with st.expander("The strip as a table", expanded=False):
        st.dataframe(frame, hide_index=True, key=f"{key}-table", width="stretch")
    return frame
