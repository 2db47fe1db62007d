"""One step of a run in full: texts, structured output, verification, and its scores everywhere.

Every value from the trace is shown as text: ``st.code`` for the texts and JSON (never
Markdown), ``st.dataframe`` for the fields; sentences that name data go through
``components.safe.md``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from auditatlas.figures.step import _value, fields_frame, structured_output  # noqa: F401 - re-exported
from components.safe import md


def _extra(step: Mapping[str, Any]) -> Any | None:
    raw = step.get("extra")
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


def draw(step: Mapping[str, Any], scores: pd.DataFrame, key: str, similar_url: str | None = None) -> None:
    """The detail panel of ``step`` (a row of ``explorer_step``) and its ``explorer_step_scores``;
    ``similar_url`` (the Patterns page on this step) adds a "steps like this one" link."""
    st.markdown(f"**Step {int(step['step_idx'])}** · {md(step.get('action'))} · agent {md(step.get('agent'))}")
    if similar_url:
        st.link_button("Steps like this one", similar_url, key=f"{key}-similar")
    left, right = st.columns([2, 3])
    with left:
        st.dataframe(fields_frame(step), hide_index=True, key=f"{key}-fields", width="stretch", height=38 + 35 * 13)
    with right:
        st.caption("Score and rank of this step in every prediction set that scores its run "
                   "(rank 1 = the set's most suspicious step of the run).")
        if scores.empty:
            st.info("No prediction set in the store scores this run.")
        else:
            frame = scores.rename(columns={"n_scored": "steps scored"})
            st.dataframe(frame, hide_index=True, key=f"{key}-scores", width="stretch", height=38 + 35 * 12)
    text_in, text_out = step.get("text_in"), step.get("text_out")
    with st.expander("Input text", expanded=True):
        _text_block(text_in, "This step has no input text (the release did not record its prompt).")
    with st.expander("Output text", expanded=True):
        _text_block(text_out, "This step has no output text.")
    structured = structured_output(text_out)
    with st.expander("Structured output", expanded=structured is not None):
        if structured is None:
            st.caption("The output ends with no JSON object.")
        else:
            st.code(json.dumps(structured, indent=2, ensure_ascii=False), language="json", wrap_lines=True)
    extra = _extra(step)
    with st.expander("Verification and other recorded fields", expanded=False):
        if extra is None:
            st.caption("Nothing else was recorded for this step.")
        elif isinstance(extra, str):
            st.code(extra, language=None, wrap_lines=True)
        else:
            st.code(json.dumps(extra, indent=2, ensure_ascii=False), language="json", wrap_lines=True)


def _text_block(value: Any, empty: str) -> None:
    value = _value(value)
    if not value:
        st.caption(empty)
        return
    st.caption(f"{len(value):,} characters")
    st.code(str(value), language=None, wrap_lines=True)
