"""The search page's hits: one text table (snippets with « » around each highlight, never
markup), a link column opening each step in the Explorer, and the pager."""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from auditatlas.search import SearchAnswer
from components import run_labels


def frame(answer: SearchAnswer, links: list[str]) -> pd.DataFrame:
    """The hits as the table shows them (the export writes the same columns)."""
    return pd.DataFrame({
        "open": links,
        "score": [None if h.score is None else round(h.score, 3) for h in answer.hits],
        "run": run_labels.labels(h.run_id for h in answer.hits),
        "step": [h.step_idx for h in answer.hits],
        "snippet": [" ".join(h.marked.split()) for h in answer.hits],
        "action": [h.action for h in answer.hits],
        "label": [h.label for h in answer.hits],
        "backbone": [h.backbone for h in answer.hits],
        "agent": [h.agent for h in answer.hits],
        "found in": [h.found_in for h in answer.hits],
        "run_id": [h.run_id for h in answer.hits],
    })


def draw(answer: SearchAnswer, links: list[str]) -> None:
    shown = frame(answer, links)
    if not answer.ranked:
        shown = shown.drop(columns=["score"])
    st.dataframe(shown, hide_index=True, width="stretch", column_config={
        **run_labels.columns(list(shown["run"])),
        "open": st.column_config.LinkColumn("open", display_text="open ↗", width="small",
                                            help="This step in the Explorer."),
        "score": st.column_config.NumberColumn("score", help="BM25 relevance (higher: more relevant)."),
        "snippet": st.column_config.TextColumn("snippet", width="large",
                                               help="« » mark the words the query matched."),
    })


def pager(answer: SearchAnswer, go: Callable[[int], None]) -> None:
    page, pages = answer.request.page, answer.pages
    left, middle, right = st.columns([1, 2, 1])
    left.button("Previous page", disabled=page <= 1, on_click=go, args=(page - 1,), key="search_prev")
    middle.caption(f"Page {page:,} of {pages:,}")
    right.button("Next page", disabled=page >= pages, on_click=go, args=(page + 1,), key="search_next")
