"""One step of a review queue: why it is in the queue, its run context, its label and history.

Every value from the trace or a reviewer (texts, names, notes) is shown as text:
``st.dataframe`` cells, ``st.code`` blocks, and sentences through ``components.safe.md``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from components.safe import md

LABEL_WORDS = {1: "anomaly", 0: "normal"}


def label_word(label: Any) -> str:
    """A stored label (1, 0 or null) in words."""
    if label is None or pd.isna(label):
        return "unlabeled"
    return LABEL_WORDS.get(int(label), str(label))


def signal(item: Mapping[str, Any], order: str) -> None:
    """Why this step is in the queue, in the order's own terms."""
    if order == "random":
        st.caption("In the queue by the seeded shuffle of the slice's labeled steps.")
        return
    if order == "judges":
        other = item.get("other_pick")
        instead = "" if other is None or pd.isna(other) else (
            f"; {int(item['other_votes'])} of them picked step {int(other)}")
        abstained = int(item["n_abstained"])
        st.caption(f"{int(item['n_against'])} of the {int(item['n_judges'])} LLM judge(s) with a pick on this run picked "
                   f"another step than this one, the human decisive step{instead}"
                   + (f" ({abstained} abstained)." if abstained else "."))
        return
    n_sets, n_top = int(item["n_sets"]), int(item["n_top"])
    if order == "doubt":
        confidence = item.get("self_confidence")
        if confidence is not None and not pd.isna(confidence):
            issue = "cleanlab calls it a label issue" if bool(item.get("label_issue")) else \
                "cleanlab does not call it a label issue"
            st.caption(f"Supervised half: out-of-fold probability of its label {float(confidence):.3f} ({issue}).")
        if n_sets:
            st.caption(f"Label-free half: {int(item['contradicting'])} of the {n_sets} label-free prediction set(s) "
                       f"scoring this step contradict its label ({n_top} rank it in their top decile).")
        else:
            st.caption("Label-free half: no label-free prediction set scores this step.")
    else:
        st.caption(f"{n_top} of the {n_sets} step-level prediction set(s) scoring this step rank it in their top decile.")


def label_line(step: Mapping[str, Any], run: Mapping[str, Any]) -> None:
    """The released label of the step and the label process it comes from."""
    st.markdown(f"**Released label:** {md(label_word(step.get('label')))} · label source "
                f"{md(step.get('label_source') or '—')} · label process of the run: "
                f"{md(run.get('label_process') or '—')}")


TEXT_HEIGHT = 190  # px of each text box beside the verdict: both fit the first screen, the rest scrolls


def texts(step: Mapping[str, Any]) -> None:
    """The step's input and output, as text, each in a box that scrolls (the whole step below)."""
    for label, column in (("Input", "text_in"), ("Output", "text_out")):
        value = step.get(column)
        st.caption(label)
        st.code("" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value), language=None,
                wrap_lines=True, height=TEXT_HEIGHT)


def context(before: pd.DataFrame, step_idx: int) -> None:
    """The steps of the run before this one, briefly (their first characters of output)."""
    if before.empty:
        st.caption(f"Step {step_idx} opens its run: no step before it.")
        return
    shown = before.assign(label=before["label"].map(label_word))
    shown = shown.rename(columns={"text_out_start": "output (start)", "text_out_chars": "output chars"})
    st.caption(f"The {len(before)} step(s) of the run before step {step_idx}.")
    st.dataframe(shown, hide_index=True, width="stretch", key="review-context")


def history(verdicts: pd.DataFrame) -> None:
    """Every verdict already given on this step, newest first (the newest counts)."""
    if verdicts.empty:
        st.caption("No verdict on this step yet.")
        return
    st.caption(f"{len(verdicts)} verdict(s) on this step, newest first; the newest counts.")
    st.dataframe(verdicts, hide_index=True, width="stretch", key="review-history")
