"""The link scheme every view shares: a page's declared URL state and its mechanics.

``state_fields`` holds a typed ``Field``, a page's ``PageState`` with ``parse`` and ``url``,
the shared slice (``SLICE``) and label choice (``LABELS``) and their helpers; ``explorer_state``
the Explorer's declared state and the one builder of links to it, ``explorer_url``. Beneath
the analyses, which write links and read the slice; the pages' own declarations, which read
the board and detector registries, are ``auditatlas.views``.
"""
from __future__ import annotations

from .explorer_state import DEFAULT_TOP_K, EXPLORER, explorer_url
from .state_fields import LABELS, SLICE, Field, PageState, labels_of, not_held, url

__all__ = ["DEFAULT_TOP_K", "EXPLORER", "LABELS", "SLICE", "labels_of", "Field", "PageState", "explorer_url", "not_held",
           "url"]
