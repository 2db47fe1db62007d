"""Boards: PRE, LIVE and POST, in lifecycle order, recomputed from the predictions in the store."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.errors import AtlasError
from components import board_view, cached
from components.tables import table

slice_ = st.session_state.get("slice", {})

st.title("Boards")
st.caption("Every number is regenerated from predictions in the store. Entrants are ordered only where a paired test "
           "(Holm-adjusted within its declared family) separates them from the floor or baseline; the rest share an "
           "unresolved band.")

available = cached.board_corpora()
TABS = [("PRE", ["pre"]), ("LIVE", ["live"]), ("POST", ["post-localization", "post-detection"])]
STATE = {"PRE": "before a run: the declared configuration", "LIVE": "on a growing prefix of the trace",
         "POST": "after a run: the finished trace"}
# Bound to the URL (?tab=LIVE) so a link opens the same tab; only the open tab is computed.
tabs = st.tabs([pillar for pillar, _ in TABS], key="tab", bind="query-params")


def board_section(name: str) -> None:
    if name == "pre":
        st.caption("The sidebar slice filters runs; PRE scores declared configurations, so it does not apply here.")
    elif any(slice_.values()):
        st.caption("Scored on the sidebar slice only.")
    corpora = available.get(name, [])
    if not corpora:
        st.info(f"The store holds no corpus the **{name}** board can score. Load one with `auditatlas ingest`.")
        return
    corpus = st.selectbox("Corpus", corpora, key=f"board_{name}_corpus", bind="query-params")
    with st.spinner(f"Scoring {name} on {corpus}…"):
        try:
            result, cells = cached.board(name, corpus, slice_)
        except AtlasError as exc:
            st.warning(str(exc))
            return
    board_view.draw(result, cells, key=f"{name}-{corpus}")
    if name == "live":
        board_view.live_chart(result)


for (pillar, names), tab in zip(TABS, tabs):
    if not tab.open:
        continue
    with tab:
        st.caption(f"{pillar}: {STATE[pillar]}.")
        for name in names:
            st.subheader({"pre": "Over-privilege", "live": "Streaming early warning", "post-localization": "Localization",
                          "post-detection": "Detection"}[name])
            board_section(name)

missing = cached.missing_blocks()
if missing:
    st.subheader("Published blocks this store cannot recompute")
    table(pd.DataFrame(missing), "missing-blocks",
          caption="Blocks of the CatchBench golden board whose corpus is not loaded (or not the same population).")
