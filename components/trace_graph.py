"""The run graph in the app: the offline page of ``auditatlas.figures.trace_graph`` in an iframe.

The page itself is built in the core (``auditatlas.views.explorer_view``), so the Explorer and
the export draw the same graph; it carries a mark where vis-network's script goes, filled here.
"""
from __future__ import annotations

from auditatlas.figures.trace_graph import column_px, fill_vis, page_for_run, render_html  # noqa: F401 - re-exported


def draw(page: str) -> None:
    """Put the page in the app: an iframe of its own, as tall as the graph plus its legend."""
    import streamlit as st

    st.iframe(fill_vis(page), height="content")


def cached_page(*args, **kwargs) -> str:
    """page_for_run behind the Streamlit data cache (a step change re-renders, a rerun does not)."""
    import streamlit as st

    global _CACHED
    if _CACHED is None:
        _CACHED = st.cache_data(show_spinner=False, max_entries=64)(page_for_run)
    return _CACHED(*args, **kwargs)


_CACHED = None
