"""Search: ranked full-text search over every step of the slice (auditatlas.search).

The URL holds the query, the label choice and the page: a link reopens the same hits. While
the index of the store's version is being built (or if its build failed) the text scan
answers, and the page says so.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.search import LABEL_CHOICES, QueryTextError, SearchRequest, search
from auditatlas.views import explorer_url
from auditatlas.views.pages import SEARCH
from components import cached, export_button, search_hits, view_state
from components.explorer_links import page_base
from components.filters import describe
from components.safe import md

slice_ = st.session_state.get("slice", {})
values = dict(view_state.read(SEARCH, bound=False).values)


def _go(**changes) -> None:
    values.update(changes)
    view_state.write(SEARCH, values)


def _from_widget(key: str, name: str) -> None:
    _go(**{name: st.session_state[key]}, page=1)


st.title("Search")
export_button.draw(SEARCH)
st.caption(f"Every step of the slice ({md(describe(slice_))}), ranked by BM25 over input, output and kept "
           "attributes. Words side by side must all match; `OR`, `NOT` (or `-word`), `\"a phrase\"`, parentheses, "
           "`agent:NAME` and `action:NAME` are understood.")
left, right = st.columns([4, 1])
st.session_state["search_page_q"] = values["q"]
left.text_input("Query", key="search_page_q", on_change=_from_widget, args=("search_page_q", "q"),
                placeholder='e.g. timeout, "tool call failed", agent:planner AND error')
labels = list(LABEL_CHOICES)
right.selectbox("Label", labels, index=labels.index(values["label"]), key="search_page_label",
                on_change=_from_widget, args=("search_page_label", "label"))
if not values["q"].strip():
    st.info("Type a query to search every step of the slice.")
    st.stop()

choice = cached.search_index()
request = SearchRequest(values["q"], slice_, values["label"], int(values["page"]))
try:
    answer = search(request, choice.index, cached.query, choice.unavailable)
except QueryTextError as exc:
    st.error(md(str(exc)))
    st.stop()
if answer.note:
    st.info(md(answer.note))
    if not answer.ranked and choice.unavailable and "being built" in choice.unavailable:
        st.button("Search again (ranked once the index is built)", key="search_again")
if not answer.hits:
    if answer.total > 0:
        st.warning(f"There are {answer.pages:,} page(s) of hits; this link asks for page {request.page:,}.")
    elif not answer.slice_empty:  # (an empty slice is the note's sentence already)
        st.warning("No step of the slice matches this query." if answer.ranked else
                   "No step's input or output in the slice contains this text as typed.")
    st.stop()
st.caption(f"{answer.total:,} steps match{', best first' if answer.ranked else ', in trace order'}.")
base = page_base(st.context.url)
search_hits.draw(answer, [explorer_url(h.run_id, h.step_idx, slice=slice_, base=base) for h in answer.hits])
search_hits.pager(answer, lambda page: _go(page=page))
