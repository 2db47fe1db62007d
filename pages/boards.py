"""Boards: PRE, LIVE and POST, in lifecycle order, recomputed from the predictions in the store."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.analyses.board_registry import PILLARS, slice_lacks
from auditatlas.analyses.board_registry import registry as board_registry
from auditatlas.analyses.labels_in_use import board_note
from auditatlas.errors import AtlasError
from auditatlas.view_state.state_fields import filters_any
from auditatlas.views.pages import BOARDS as BOARDS_STATE
from auditatlas.views.pages import board_corpus_key
from components import board_view, cached, export_button, view_state
from components.safe import md
from components.tables import table

slice_ = st.session_state.get("slice", {})

st.title("Boards")
st.caption("Every number is regenerated from predictions in the store. Entrants are ordered only where a paired test "
           "(Holm-adjusted within its declared family) separates them from the floor or baseline; the rest share an "
           "unresolved band.")
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(BOARDS_STATE)
export_button.draw(BOARDS_STATE)

available = cached.board_corpora()
# One tab per pillar, its boards in registry order: a board added to the registry shows up here.
BOARDS = board_registry()
TABS = [(pillar, [b.name for b in BOARDS.values() if b.task.pillar == pillar]) for pillar in PILLARS]
TABS = [(pillar, names) for pillar, names in TABS if names]
STATE = {"PRE": "before a run: the declared configuration", "LIVE": "on a growing prefix of the trace",
         "POST": "after a run: the finished trace"}
# Bound to the URL (?tab=LIVE) so a link opens the same tab; only the open tab is computed.
tabs = st.tabs([pillar for pillar, _ in TABS], key="tab", bind="query-params")


def board_section(name: str, per_seed: bool) -> None:
    board = BOARDS[name]
    if not board.allows_slice:
        st.caption(f"The sidebar slice filters runs; this board scores {board.item_kind}, so it does not apply here.")
    elif filters_any(slice_):
        st.caption("Scored on the sidebar slice only.")
    if board_note(slice_, board.task.granularity):
        st.caption(board_note(slice_, board.task.granularity))
    corpora = available.get(name, [])
    lacks = slice_lacks(board, slice_, corpora)
    if lacks:
        st.info(md(lacks))
        return
    if not corpora:
        st.info(f"The store holds no corpus the **{name}** board can score. Load one with `auditatlas ingest`.")
        return
    corpus = st.selectbox("Corpus", corpora, key=board_corpus_key(name), bind="query-params")
    link.not_held(board_corpus_key(name), f"the {name} board's corpus", corpus)
    with st.spinner(f"Scoring {name} on {md(corpus)}…"):
        try:
            result, cells = cached.board(name, corpus, slice_)
        except AtlasError as exc:
            st.warning(md(str(exc)))
            return
    board_view.draw(result, cells, key=f"{name}-{corpus}", per_seed=per_seed)
    if board.task.pillar == "LIVE":
        board_view.live_chart(result)


def _heading(board) -> str:
    """The board's title without its pillar (the tab says it): "LIVE streaming" -> "Streaming"."""
    title = board.title.removeprefix(board.task.pillar).strip()
    return title[:1].upper() + title[1:] if title else board.name


for (pillar, names), tab in zip(TABS, tabs):
    if not tab.open:
        continue
    with tab:
        st.caption(f"{pillar}: {STATE[pillar]}.")
        # One toggle for the page (only the open tab draws it), bound to the URL (?per_seed=true).
        per_seed = st.toggle("Every seed on its own row", key="per_seed", bind="query-params",
                             help="A re-scored detector is one row, its mean ± sd over seeds; turn on to see each seed.")
        for name in names:
            st.subheader(_heading(BOARDS[name]))
            board_section(name, per_seed)

missing = cached.missing_blocks()
if missing:
    st.subheader("Published blocks this store cannot recompute")
    table(pd.DataFrame(missing), "missing-blocks",
          caption="Blocks of the CatchBench golden board whose corpus is not loaded (or not the same population).")
