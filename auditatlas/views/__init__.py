"""Declared view state: every page's URL parameters, their parse and the links they write.

``fields`` holds the mechanics (a typed ``Field``, a page's ``PageState`` with ``parse`` and
``url``, the shared ``SLICE``); ``explorer`` the explorer's state and the one explorer link
builder, ``explorer_url``; ``pages`` every other page and ``PAGES`` in navigation order;
``readme`` the README table rendered from them. No Streamlit anywhere here.

Only ``fields`` and ``explorer`` are imported with the package: core modules that build
explorer links import it, and ``pages`` reads the board and detector registries above them.
"""
from __future__ import annotations

from .explorer import DEFAULT_TOP_K, EXPLORER, explorer_url
from .fields import LABELS, SLICE, Field, PageState, labels_of, not_held, url

__all__ = ["DEFAULT_TOP_K", "EXPLORER", "LABELS", "SLICE", "labels_of", "Field", "PageState", "explorer_url", "not_held", "url"]
