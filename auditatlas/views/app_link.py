"""An app link read the way its page reads it: the page's declaration, the slice, the problems.

The link is the app's own (``http://host:port/boards?tab=POST&corpus=...`` or just
``/boards?...``): the export and the page parse it with the same ``PageState.parse``, so a
value the page cannot use is the page's own sentence, and the view exported is the view the
link opens.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pandas as pd

from ..errors import AtlasError
from ..view_state import PageState
from ..view_state.state_fields import shared_of, slice_not_held
from .pages import OVERVIEW, PAGES

Query = Callable[..., pd.DataFrame]
# The Overview lives at "/" (Streamlit gives the default page no other path); "/overview" is
# what a reader would type for it.
ALIASES = {"": "/", "/overview": "/"}


class ExportError(AtlasError):
    """A link the export cannot turn into a file: one sentence, exit 1 in the CLI."""


@dataclass
class Link:
    given: str  # as the reader gave it
    page: PageState
    params: dict[str, list[str]]
    slice: dict[str, Any]  # the slice's columns (lists) and the label choice (``labels``)
    values: dict[str, Any]
    problems: list[str] = field(default_factory=list)

    @property
    def app_link(self) -> str:
        """The link as the app writes it (the page's path, the slice, the values that differ
        from their defaults): one view, one link."""
        return self.page.url(self.slice, self.values)


def page_of(path: str) -> PageState:
    path = ALIASES.get(path.rstrip("/") if path != "/" else path, path.rstrip("/") or "/")
    for declared in PAGES:
        if declared.path == path:
            return declared
    raise ExportError(f"'{path}' is not a page of the app; its pages are {', '.join(p.path for p in PAGES)}.")


def parse_link(given: str) -> Link:
    """The page ``given`` names, its slice and its values, with one sentence per value the
    page cannot use (the same sentences the page shows)."""
    parts = urlsplit(given.strip())
    page = page_of(parts.path or "/")
    params = parse_qs(parts.query, keep_blank_values=True)
    slice_ = shared_of(params)  # the slice and the label choice
    values, problems = page.parse(params)
    return Link(given, page, params, slice_, values, problems)


def check_slice(link: Link, query: Query) -> None:
    """Drop the slice values the store does not hold, with the sidebar's sentence (the app
    leaves them out too, so the export shows what the page shows)."""
    options = query("slice_options")
    missing: dict[str, list[str]] = {}
    for column, asked in link.slice.items():
        if column == "labels":  # the label choice, checked by the page's parse
            continue
        held = set(options.loc[options["column_name"] == column, "value"].astype(str))
        lost = [v for v in dict.fromkeys(asked) if v not in held]
        if lost and held:
            missing[column] = lost
            link.slice[column] = [v for v in asked if v in held]
    if missing:
        link.problems.append(slice_not_held(missing))


__all__ = ["ExportError", "Link", "OVERVIEW", "check_slice", "page_of", "parse_link"]
