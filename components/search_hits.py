"""The search page's pager: previous and next around the page's line (auditatlas.views.search_view)."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from auditatlas.search.answer import SearchAnswer
from auditatlas.views import search_view
from components import view_blocks


def pager(answer: SearchAnswer, go: Callable[[int], None]) -> None:
    page, pages = answer.request.page, answer.pages
    left, middle, right = st.columns([1, 2, 1])
    left.button("Previous page", disabled=page <= 1, on_click=go, args=(page - 1,), key="search_prev")
    with middle:
        view_blocks.draw(search_view.pager_line(answer))
    right.button("Next page", disabled=page >= pages, on_click=go, args=(page + 1,), key="search_next")
