"""Boards: PRE, LIVE and POST, in lifecycle order, recomputed from the predictions in the store.

The content is ``auditatlas.views.boards_view``'s; this file holds the tabs and the pickers."""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.views import boards_view as view
from auditatlas.views.pages import BOARDS as BOARDS_STATE
from auditatlas.views.pages import board_corpus_key
from components import cached, export_button, view_blocks, view_state
from components.safe import md

slice_ = st.session_state.get("slice", {})

st.title(BOARDS_STATE.title)
view_blocks.draw(view.intro())
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(BOARDS_STATE)
export_button.draw(BOARDS_STATE)

available = cached.board_corpora()
TABS = view.tabs()
# Bound to the URL (?tab=LIVE) so a link opens the same tab; only the open tab is computed.
tabs = st.tabs([pillar for pillar, _ in TABS], key="tab", bind="query-params")


def board_section(name: str, per_seed: bool, curves: bool) -> None:
    corpora = available.get(name, [])
    preamble, drawable = view.board_preamble(name, slice_, corpora)
    view_blocks.draw(preamble)
    if not drawable:
        return
    corpus = st.selectbox("Corpus", corpora, key=board_corpus_key(name), bind="query-params")
    link.not_held(board_corpus_key(name), f"the {name} board's corpus", corpus)
    with st.spinner(f"Scoring {name} on {md(corpus)}…"):
        body = view.board_body(name, corpus, slice_, cached.board, per_seed, curves)
    view_blocks.draw(body)


for (pillar, names), tab in zip(TABS, tabs):
    if not tab.open:
        continue
    with tab:
        view_blocks.draw(view.pillar_note(pillar))
        # Toggles for the page (only the open tab draws them), bound to the URL (?per_seed=true).
        left, right = st.columns([1, 1]) if pillar == "LIVE" else (st.container(), None)
        per_seed = left.toggle("Every seed on its own row", key="per_seed", bind="query-params",
                               help="A re-scored detector is one row, its mean ± sd over seeds; turn on to see each seed.")
        curves = right is not None and right.toggle(
            "ROC-AUC curves by prefix", key="curves", bind="query-params",
            help="Draw each entrant's ROC-AUC over the run's prefixes under its board (the table holds the same numbers).")
        for name in names:
            view_blocks.draw([view.board_heading(name)])
            board_section(name, per_seed, curves)

view_blocks.draw(view.missing(cached.query))
