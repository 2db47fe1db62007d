"""The explorer's declared view state, and the one builder of links to the explorer.

Every explorer link in the app (a search hit, a detector's false positive, a propagation
chain, the page's own "link to this view") is written by ``explorer_url``, so the names and
their order are the declaration's.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .state_fields import Field, PageState

DEFAULT_TOP_K = 1  # steps flagged when a link names a set but no rule


def _one_rule(values: dict[str, Any], problems: list[str]) -> None:
    """A link gives one decision rule: a step count or a score cut, not both."""
    if values["top_k"] is not None and values["threshold"] is not None:
        problems.append("The link gives both top_k and threshold; the threshold is used.")
        values["top_k"] = None


EXPLORER = PageState(
    path="/explorer",
    title="Explorer",
    view="auditatlas.views.explorer_view:page",
    what="run list, dependency graph with ground truth, detector flags and chain roles, step detail, "
         "Who&When judges' strip, text search",
    fields=(
        Field("run", "str", help="the open run (its id)"),
        Field("step", "int", low=0, help="the open step (its index in the run)",
              expects="a step number (0, 1, 2, …)", fallback="no step is open"),
        Field("set", "str", help="the prediction set whose flags are drawn (its id)"),
        Field("top_k", "int", low=0, help=f"flag the set's k highest-ranked steps of the run (a number of steps; "
                                           f"top {DEFAULT_TOP_K} when neither rule is given)",
              expects="a whole number of steps ≥ 0", fallback=f"using the top {DEFAULT_TOP_K}"),
        Field("threshold", "float", help="flag the steps scoring at least this (a score cut; wins over top_k)",
              expects="a number", fallback=f"using the top {DEFAULT_TOP_K} steps instead"),
        Field("rule", "choice", default="rank", choices=("rank", "own"),
              help="own: flag the steps the set itself decided are anomalous (its pred_label), as the Detectors "
                   "page's own rule; rank: by top_k or threshold", fallback="flagging by rank"),
        Field("q", "str", default="", help="text search phrase"),
        Field("action", "list", default=[], help="the search's action filter"),
        Field("context", "bool", default=False, help="1: show the inferred full-context edges",
              fallback="inferred context edges stay hidden"),
        Field("color", "choice", default="agent", choices=("agent", "action"), help="fill the graph's steps by",
              fallback="colouring by agent"),
        Field("lanes", "choice", default="scope", choices=("scope", "agent"),
              help="one graph row per scope or per agent", fallback="one row per scope"),
        Field("expand", "list", default=[], help="scopes opened in a collapsed long run"),
    ),
    check=_one_rule,
)


def explorer_url(run_id: str | None, step_idx: int | None = None, set_id: str | None = None,
                 slice: Mapping[str, Iterable[Any]] | None = None, base: str | None = None,
                 **values: Any) -> str:
    """The explorer on ``run_id`` (at ``step_idx``, scored by ``set_id``) inside ``slice``;
    ``values`` are the explorer's other fields by name (``top_k``, ``q``, ``expand``, …).

    A decision rule without a set means nothing, so it is left out of such a link.
    """
    values = {"run": run_id, "step": None if step_idx is None else int(step_idx), "set": set_id, **values}
    if values.get("set") is None:
        values["top_k"] = values["threshold"] = None
    return EXPLORER.url(slice, values, base)
