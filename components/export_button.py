""""Export this view": the page's current link written as one offline HTML file (auditatlas.export).

The file is built only when the reader clicks (a callable ``data``), through the same cached
queries the page just ran, and kept per store version and link, so a second click (or
another reader's, on the same view) does not build it again.
"""
from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlencode

import streamlit as st

from auditatlas.export import Export, export_view, not_shown
from auditatlas.figures.tables import file_name
from auditatlas.view_state.state_fields import APP_PARAMS, names_in, values_of
from auditatlas.views import PageState
from auditatlas.views.app_link import parse_link
from components import cached
from components.explorer_links import app_root


def current_link(page: PageState) -> str:
    """The page's link as the URL holds it now (slice and choices), e.g. ``/boards?tab=POST``."""
    items = [(name, value) for name in names_in(st.query_params) if name not in APP_PARAMS  # not the tour draft
             for value in values_of(st.query_params, name)]
    return page.path + ("?" + urlencode(items) if items else "")


@lru_cache(maxsize=16)
def exported(link: str, root: str, stamp: int, app_url: str | None = None) -> Export:
    """The view ``link`` as its export draws it, per store version; its links lead to ``app_url``."""
    return export_view(cached.query, root, link, app_url=app_url)


def _file(link: str, root: str, stamp: int, app_url: str | None) -> bytes:
    return exported(link, root, stamp, app_url).html.encode("utf-8")


def draw(page: PageState) -> None:
    """The button; greyed, with the reason in its tooltip, where this view cannot export (a
    search without a query, a tour not saved): a page opened bare shows no sentence that reads
    as an error."""
    link = current_link(page)
    reason = not_shown(parse_link(link))
    if reason:
        st.button("Export this view", disabled=True, help=reason, key=f"export-{page.path}")
        return
    root, stamp = str(cached.store_root()), cached.store_stamp()
    # The file's links lead back to this app, at the address the reader's browser uses.
    app_url = app_root(st.context.url) or None
    st.download_button("Export this view", data=lambda: _file(link, root, stamp, app_url),
                       file_name=file_name(f"auditatlas-{page.title}").removesuffix(".csv") + ".html",
                       mime="text/html", on_click="ignore", key=f"export-{page.path}",
                       help="One self-contained HTML file of this view (tables with their CSV, interactive charts, "
                            "the trace graph) that opens offline from disk.")
