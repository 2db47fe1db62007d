"""The explorer's view state as a URL: read it from the query string, write it back, build links.

Names (DESIGN.md, "Links"): ``run`` = run id, ``step`` = step index, ``set`` = prediction set
id, ``top_k`` or ``threshold`` = the decision rule, ``q`` = search phrase, plus ``action``
(repeatable: the search's action filter), ``context=1`` (show inferred full-context edges),
``color=action`` (fill by action instead of agent) and ``expand`` (repeatable: scopes opened
in a collapsed long run). The sidebar slice keeps its own names (components/filters.py).

A value that cannot be read (``step=abc``, ``top_k=-1``) becomes one sentence in
``ViewState.problems``; values the store does not hold (an unknown run) are checked by the
page against the store. Nothing is dropped silently.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlencode, urlsplit

from components.safe import md
from queries import SLICE_COLUMNS

PAGE_PATH = "/explorer"
VIEW_KEYS = ("run", "step", "set", "top_k", "threshold", "q", "action", "context", "color", "expand")
DEFAULT_TOP_K = 1


@dataclass
class ViewState:
    run: str | None = None
    step: int | None = None
    step_text: str | None = None  # the raw value, to report a step the run does not have
    set_id: str | None = None
    top_k: int | None = None
    threshold: float | None = None
    q: str = ""
    actions: list[str] = field(default_factory=list)
    context: bool = False
    color: str = "agent"
    expand: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def rule(self) -> dict[str, Any]:
        """``{"top_k": k}`` or ``{"threshold": t}``; top 1 when the link names neither."""
        if self.threshold is not None:
            return {"threshold": self.threshold}
        return {"top_k": self.top_k if self.top_k is not None else DEFAULT_TOP_K}


def _one(params: Any, key: str) -> str | None:
    values = _all(params, key)
    return values[-1] if values else None


def _all(params: Any, key: str) -> list[str]:
    if hasattr(params, "get_all"):
        return [str(v) for v in params.get_all(key)]
    value = params.get(key) if isinstance(params, Mapping) else None
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def read(params: Any) -> ViewState:
    """The view a query string asks for (``st.query_params`` or a plain mapping)."""
    state = ViewState()
    run = _one(params, "run")
    state.run = run if run else None
    step = _one(params, "step")
    if step not in (None, ""):
        state.step_text = step
        try:
            state.step = int(step)
            if state.step < 0:
                raise ValueError
        except ValueError:
            state.step = None
            state.problems.append(f"The link's step '{md(step)}' is not a step number (0, 1, 2, …); no step is open.")
    state.set_id = _one(params, "set") or None
    top_k, threshold = _one(params, "top_k"), _one(params, "threshold")
    if top_k not in (None, ""):
        try:
            state.top_k = int(top_k)
            if state.top_k < 0:
                raise ValueError
        except ValueError:
            state.problems.append(f"The link's top_k '{md(top_k)}' is not a whole number of steps ≥ 0; "
                                  f"using the top {DEFAULT_TOP_K}.")
            state.top_k = None
    if threshold not in (None, ""):
        try:
            state.threshold = float(threshold)
            if state.threshold != state.threshold:
                raise ValueError
        except ValueError:
            state.problems.append(f"The link's threshold '{md(threshold)}' is not a number; "
                                  f"using the top {DEFAULT_TOP_K} steps instead.")
            state.threshold = None
    if state.top_k is not None and state.threshold is not None:
        state.problems.append("The link gives both top_k and threshold; the threshold is used.")
        state.top_k = None
    state.q = _one(params, "q") or ""
    state.actions = [a for a in _all(params, "action") if a]
    context = _one(params, "context")
    state.context = context in ("1", "true", "yes")
    if context not in (None, "", "0", "1", "true", "false", "yes", "no"):
        state.problems.append(f"The link's context '{md(context)}' is neither 1 nor 0; inferred context edges stay hidden.")
    color = _one(params, "color")
    if color in ("agent", "action"):
        state.color = color
    elif color not in (None, ""):
        state.problems.append(f"The link's color '{md(color)}' is neither agent nor action; colouring by agent.")
    state.expand = [s for s in _all(params, "expand") if s]
    return state


def query_items(slice_: Mapping[str, list] | None, state: ViewState, **override: Any) -> list[tuple[str, str]]:
    """The (name, value) pairs of a link to ``state`` (with ``override``s) inside ``slice_``."""
    items: list[tuple[str, str]] = []
    for col in SLICE_COLUMNS:
        for v in (slice_ or {}).get(col) or []:
            items.append((col, _num(v)))
    values = {
        "run": state.run, "step": state.step, "set": state.set_id,
        "top_k": state.top_k if state.threshold is None else None, "threshold": state.threshold,
        "q": state.q or None, "action": list(state.actions), "context": "1" if state.context else None,
        "color": state.color if state.color != "agent" else None, "expand": list(state.expand),
    }
    values.update(override)
    if values.get("set") is None:  # a rule without a set means nothing
        values["top_k"] = values["threshold"] = None
    for key in VIEW_KEYS:
        v = values.get(key)
        if v is None or v == [] or v == "":
            continue
        for item in (v if isinstance(v, list) else [v]):
            items.append((key, _num(item)))
    return items


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return repr(v)  # 0.0 stays "0.0" (the slice's temperature values are written so)
    return str(v)


def link(slice_: Mapping[str, list] | None, state: ViewState, base: str = PAGE_PATH, **override: Any) -> str:
    """A link to the explorer showing ``state``: ``base?slice…&run=…&step=…``.

    Values are URL-encoded, so a run id or phrase can never end the URL or start another.
    """
    query = urlencode(query_items(slice_, state, **override))
    return f"{base}?{query}" if query else base


def page_base(current_url: str | None) -> str:
    """``scheme://host/explorer`` from the URL the browser shows, or the bare path when unknown."""
    if not current_url:
        return PAGE_PATH
    parts = urlsplit(current_url)
    if not parts.scheme or not parts.netloc:
        return PAGE_PATH
    path = parts.path.rstrip("/")
    if not path.endswith("explorer"):
        path = path + PAGE_PATH
    return f"{parts.scheme}://{parts.netloc}{path}"


def write(query_params: Any, state: ViewState) -> None:
    """Replace the view's names in ``st.query_params`` (the slice's are left to its widgets)."""
    wanted: dict[str, list[str]] = {}
    for key, value in query_items({}, state):
        wanted.setdefault(key, []).append(value)
    for key in VIEW_KEYS:
        if key in wanted:
            new = wanted[key]
            if _all(query_params, key) != new:
                query_params[key] = new if len(new) > 1 else new[0]
        elif key in query_params:
            del query_params[key]
