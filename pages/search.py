"""Search: ranked full-text search over every step of the slice (auditatlas.search).

The URL holds the query, the label choice and the page: a link reopens the same hits. While
the index of the store's version is being built (or if its build failed) the text scan
answers, and the page says so. The content is ``auditatlas.views.search_view``'s.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.run_labels import names_of
from auditatlas.search import LABEL_CHOICES
from auditatlas.search.answer import SearchAnswer
from auditatlas.views import search_view as view
from auditatlas.views.pages import SEARCH
from components import cached, export_button, search_hits, view_blocks, view_state
from components.explorer_links import page_base

slice_ = st.session_state.get("slice", {})
values = dict(view_state.read(SEARCH, bound=False).values)


def _go(**changes) -> None:
    values.update(changes)
    view_state.write(SEARCH, values)


def _from_widget(key: str, name: str) -> None:
    _go(**{name: st.session_state[key]}, page=1)


st.title(SEARCH.title)
export_button.draw(SEARCH)
view_blocks.draw(view.intro(slice_))
left, right = st.columns([4, 1])
st.session_state["search_page_q"] = values["q"]
left.text_input("Query", key="search_page_q", on_change=_from_widget, args=("search_page_q", "q"),
                placeholder='e.g. timeout, "tool call failed", agent:planner AND error')
labels = list(LABEL_CHOICES)
right.selectbox("Label", labels, index=labels.index(values["label"]), key="search_page_label",
                on_change=_from_widget, args=("search_page_label", "label"))
if not values["q"].strip():
    view_blocks.draw(view.no_query())
    st.stop()

choice = cached.search_index()
answer = view.answer(cached.query, slice_, values, choice.index, choice.unavailable)
if not isinstance(answer, SearchAnswer):  # the query cannot be read: one sentence
    view_blocks.draw(answer)
    st.stop()
view_blocks.draw(view.note(answer))
if answer.note and not answer.ranked and choice.unavailable and "being built" in choice.unavailable:
    st.button("Search again (ranked once the index is built)", key="search_again")
view_blocks.draw(view.hits(answer, slice_, base=page_base(st.context.url),
                           names=names_of(cached.query, [h.run_id for h in answer.hits])))
if answer.hits:
    search_hits.pager(answer, lambda page: _go(page=page))
