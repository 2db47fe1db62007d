"""The explorer's view state as an object the page changes: read from the URL, written back.

The names, their parse and the links are declared once in ``auditatlas.view_state.explorer_state``
(``EXPLORER``, ``explorer_url``); this module maps them onto ``ViewState``'s attributes, which
the page's widget callbacks set (``set_id`` is ``set``, ``actions`` is ``action``). The page
writes the URL itself (no widget is bound to it), so a value it cannot use stays in the URL and
its sentence stays on screen until the reader changes the view.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from auditatlas.view_state.state_fields import values_of
from auditatlas.views import DEFAULT_TOP_K, EXPLORER, explorer_url
from auditatlas.views.pages import PAGES

PAGE_PATH = EXPLORER.path
# ViewState attribute -> the explorer's URL name, where the two differ.
NAMES = {"set_id": "set", "actions": "action", "decide": "rule"}


@dataclass
class ViewState:
    run: str | None = None
    step: int | None = None
    step_text: str | None = None  # the raw value, to report a step the run does not have
    set_id: str | None = None
    top_k: int | None = None
    threshold: float | None = None
    decide: str = "rank"  # the URL's rule: own (the set's pred_label) or rank (top_k / threshold)
    q: str = ""
    actions: list[str] = field(default_factory=list)
    context: bool = False
    color: str = "agent"
    lanes: str = "scope"
    expand: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def rule(self) -> dict[str, Any]:
        """``{"own": True}``, ``{"top_k": k}`` or ``{"threshold": t}``; top 1 when the link names none."""
        if self.decide == "own":
            return {"own": True}
        if self.threshold is not None:
            return {"threshold": self.threshold}
        return {"top_k": self.top_k if self.top_k is not None else DEFAULT_TOP_K}

    def values(self) -> dict[str, Any]:
        """The state by URL name."""
        return {NAMES.get(a, a): getattr(self, a) for a in STATE_ATTRS}


STATE_ATTRS = ("run", "step", "set_id", "top_k", "threshold", "decide", "q", "actions", "context", "color", "lanes",
               "expand")


def from_values(values: Mapping[str, Any], params: Any = None, problems: list[str] | None = None) -> ViewState:
    """A ``ViewState`` from the declaration's parsed values (``params``: the raw URL, for the step's text)."""
    step_text = values_of(params, "step")[-1:] if params is not None else []
    return ViewState(**{a: values[NAMES.get(a, a)] for a in STATE_ATTRS}, step_text=(step_text or [None])[0] or None,
                     problems=list(problems or []))


def read(params: Any) -> ViewState:
    """The view a query string asks for (``st.query_params`` or a plain mapping), with its problems."""
    values, problems = EXPLORER.parse(params)
    return from_values(values, params, problems)


def link(slice_: Mapping[str, list] | None, state: ViewState, base: str = PAGE_PATH, **override: Any) -> str:
    """A link to the explorer showing ``state`` (with ``override``s by attribute name) inside ``slice_``."""
    values = state.values()
    values.update({NAMES.get(k, k): v for k, v in override.items()})
    if values.get("threshold") is not None:
        values["top_k"] = None  # the threshold wins, so a link never gives both
    run, step, set_id = values.pop("run"), values.pop("step"), values.pop("set")
    return explorer_url(run, step, set_id, slice=slice_, base=base, **values)


def app_root(current_url: str | None) -> str:
    """``scheme://host[/base path]`` of the app, from the URL the browser shows on any page: the
    page's own path is taken off (a page's link is its root's, never the current page's)."""
    if not current_url:
        return ""
    parts = urlsplit(current_url)
    if not parts.scheme or not parts.netloc:
        return ""
    path = parts.path.rstrip("/")
    for own in sorted((page.path for page in PAGES if page.path != "/"), key=len, reverse=True):
        if path == own or path.endswith(own):
            path = path[: len(path) - len(own)]
            break
    return f"{parts.scheme}://{parts.netloc}{path}"


def page_base(current_url: str | None) -> str:
    """``scheme://host[/base path]/explorer`` from the URL the browser shows on any page, or the
    bare path when unknown."""
    return app_root(current_url) + PAGE_PATH


def url_values(state: ViewState) -> dict[str, Any]:
    """The state as the URL keeps it: a rule only with a set, the threshold winning over top_k."""
    values = state.values()
    if values["set"] is None:
        values["top_k"] = values["threshold"] = None
        values["rule"] = "rank"
    elif values["rule"] == "own":
        values["top_k"] = values["threshold"] = None
    elif values["threshold"] is not None:
        values["top_k"] = None
    return values
