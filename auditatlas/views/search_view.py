"""The Search page's content: what is searched, the hits of one page as text with a link to each
step in the Explorer, and why there are none.

The app draws the query box, a "search again" button and the pager between the sections;
``page`` calls them in order with the link's values, for the export.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses.board_kept import Remember
from ..run_labels import names_of, run_label
from ..search.answer import SearchAnswer, SearchRequest, search
from ..search.parse import QueryTextError
from ..view_state.explorer_state import explorer_url
from ..view_state.state_fields import describe_slice
from . import blocks as b

Query = Callable[..., pd.DataFrame]


def intro(slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.note("Every step of the slice ({}), ranked by BM25 over input, output and kept attributes. Words side "
                   "by side must all match; `OR`, `NOT` (or `-word`), `\"a phrase\"`, parentheses, `agent:NAME` and "
                   "`action:NAME` are understood.", describe_slice(slice_))]


def no_query() -> list[b.Block]:
    return [b.info("Type a query to search every step of the slice.")]


def answer(query: Query, slice_: Mapping[str, Any], values: Mapping[str, Any], index: Any,
           unavailable: str | None) -> SearchAnswer | list[b.Block]:
    """The search the values ask for (one page of hits), or the sentence saying why the query
    cannot be read."""
    request = SearchRequest(values["q"], dict(slice_), values["label"], int(values["page"]))
    try:
        return search(request, index, query, unavailable)
    except QueryTextError as exc:
        return [b.Text.plain(str(exc), "error")]


def note(found: SearchAnswer) -> list[b.Block]:
    """Why the search is not ranked, or what the slice lacks."""
    return [b.Text.plain(found.note, "info")] if found.note else []


def hits(found: SearchAnswer, slice_: Mapping[str, Any], base: str | None = None,
         names: Mapping[str, str] | None = None) -> list[b.Block]:
    """The page of hits, or why there is none."""
    if not found.hits:
        if found.total > 0:
            return [b.warning("There are {:,} page(s) of hits; this link asks for page {:,}.", found.pages,
                              found.request.page)]
        if found.slice_empty:  # the note's sentence already
            return []
        return [b.warning("No step of the slice matches this query." if found.ranked else
                          "No step's input or output in the slice contains this text as typed.")]
    links = [explorer_url(h.run_id, h.step_idx, slice=slice_, base=base) for h in found.hits]
    shown = frame(found, links, names)
    if not found.ranked:
        shown = shown.drop(columns=["score"])
    return [b.note("{:,} steps match{}.", found.total, ", best first" if found.ranked else ", in trace order"),
            b.Table(shown, "search-hits", columns=(
                b.Column("open", link_text="open ↗", width="small", help="This step in the Explorer."),
                b.Column("score", number=True, help="BM25 relevance (higher: more relevant)."),
                b.Column("snippet", width="large", help="« » mark the words the query matched.")))]


def frame(found: SearchAnswer, links: list[str], names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The hits as a table: snippets with « » around each highlight, never markup; a run by its
    label (``names``: the names runs carry, ``run_labels.names_of``)."""
    names = names or {}
    return pd.DataFrame({
        "open": links,
        "score": [None if h.score is None else round(h.score, 3) for h in found.hits],
        "run": [run_label(h.run_id, name=names.get(h.run_id)) for h in found.hits],
        "step": [h.step_idx for h in found.hits],
        "snippet": [" ".join(h.marked.split()) for h in found.hits],
        "action": [h.action for h in found.hits],
        "label": [h.label for h in found.hits],
        "backbone": [h.backbone for h in found.hits],
        "agent": [h.agent for h in found.hits],
        "found in": [h.found_in for h in found.hits],
        "run_id": [h.run_id for h in found.hits],
    })


def pager_line(found: SearchAnswer) -> list[b.Block]:
    return [b.note("Page {:,} of {:,}", found.request.page, found.pages)]


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """The link's query, its hits on the link's page (ranked when the store's index is built)."""
    from ..search.index import open_built

    index = open_built(root)
    try:
        found = answer(query, link.slice, link.values, index,
                       None if index else "the index of this store version is not built")
    finally:
        if index is not None:
            index.close()
    out: list[b.Block] = [*intro(link.slice), b.Heading(b.Text("Search: {}", (str(link.values["q"]),)))]
    if not isinstance(found, SearchAnswer):
        return out + found
    out += note(found) + hits(found, link.slice, names=names_of(query, [h.run_id for h in found.hits]))
    return out + (pager_line(found) if found.hits else [])
