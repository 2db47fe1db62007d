"""A page's view shown away from its page (an exported file, a tour's stop): the link's problems,
the slice values the store does not hold, the page's badge (labels, simulated corpora), then the
page's own view.

The export draws ``stop_blocks`` for the one view a file holds; the tour's view draws it for
every stop, so a stop shows what its page's export shows, in the same words.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses.board_kept import Remember
from ..analyses.labels_in_use import caption_for as label_caption
from . import blocks as b
from .app_link import ExportError, Link, check_slice

Query = Callable[..., pd.DataFrame]


def not_shown(link: Link) -> str | None:
    """Why the view ``link`` names cannot be shown on its own (one sentence), or None when it can."""
    if link.page.path == "/search" and not str(link.values["q"]).strip():
        return "The link searches for nothing (it has no q=...); export the Search page with a query."
    if link.page.path == "/tour" and not str(link.values["name"]).strip():
        return "The link names no tour (it has no name=...); save the draft under a name, then export /tour?name=NAME."
    return None


def choices(link: Link) -> str:
    """The page's own values the link sets (the defaults left out), as the link writes them."""
    defaults = link.page.defaults()
    parts = [f"{name}={value}" for name, value in link.values.items()
             if value not in (None, "", []) and value != defaults.get(name)]
    return "; ".join(parts) or "the page's defaults"


def simulated_corpora(query: Query, slice_: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The corpora of the slice (every corpus when it names none) that are generated, not released."""
    known = query("corpora")
    names = set(known.loc[known["kind"] == "simulated", "corpus"])
    if (slice_ or {}).get("corpus"):
        names &= set((slice_ or {})["corpus"])
    return tuple(sorted(names))


def badge(query: Query, slice_: Mapping[str, Any] | None) -> b.Badge:
    """The one badge every page and every export wears: the labels its numbers read and the
    simulated corpora among its slice's."""
    return b.Badge(label_caption(query, slice_), simulated_corpora(query, slice_))


def stop_blocks(query: Query, root: str | Path, link: Link, remember: Remember | None = None) -> list[b.Block]:
    """The view ``link`` opens, framed: its problems (with the slice values the store does not
    hold), the badge, then the page's view function's blocks. Raises ``ExportError``
    (one sentence) for a view that cannot be shown on its own or a value it cannot open."""
    reason = not_shown(link)
    if reason:
        raise ExportError(reason)
    check_slice(link, query)
    return ([b.Text.plain(problem, "warning") for problem in link.problems]
            + ([badge(query, link.slice)] if link.page.badge else [])
            + link.page.view_function()(query, link, Path(root), remember))


__all__ = ["badge", "choices", "not_shown", "simulated_corpora", "stop_blocks"]
