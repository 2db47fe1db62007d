"""Every page's declared view state (``pages``: its fields, defaults and the links it writes,
``PAGES`` in navigation order) and the README table rendered from them (``readme``). No
Streamlit anywhere here.

The link scheme's mechanics and the Explorer's state, which the analyses use to write links,
live beneath them in ``auditatlas.view_state``; its names are re-exported here for the pages.
"""
from __future__ import annotations

from ..view_state import (
    DEFAULT_TOP_K,
    EXPLORER,
    LABELS,
    SLICE,
    Field,
    PageState,
    explorer_url,
    labels_of,
    not_held,
    url,
)

__all__ = ["DEFAULT_TOP_K", "EXPLORER", "LABELS", "SLICE", "labels_of", "Field", "PageState", "explorer_url", "not_held",
           "url"]
