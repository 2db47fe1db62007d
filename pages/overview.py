"""Overview: what is loaded, and the slice's action success, anomaly and silent-failure rates.

The content is ``auditatlas.views.overview_view``'s."""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.views import overview_view as view
from auditatlas.views.pages import OVERVIEW
from components import cached, export_button, view_blocks, view_state

st.title(OVERVIEW.title)
view_state.read(OVERVIEW)  # the slice is the sidebar's; anything else a link gives is reported
export_button.draw(OVERVIEW)
view_blocks.draw(view.content(cached.query, st.session_state.get("slice", {})))
