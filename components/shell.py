"""Guard every page runs first: make sure the app's own navigation (app.py) is in charge.

Streamlit still treats a ``pages/`` folder beside the entry script as a legacy (v1)
multipage app until the first ``st.navigation`` call of the process. A first visitor who
opens a deep link (``/boards?...``) would then run the page file alone, without app.py's
shared slice. Flipping the flag and rerunning hands the request to app.py, which restores
the slice from the URL and runs the same page.
"""
from __future__ import annotations

import streamlit as st


def ensure_app_navigation() -> None:
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
