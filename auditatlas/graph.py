"""The dependency graph of one run, with its ground truth and a detector's flags (no Streamlit).

The explorer draws this model; the tests check it by hand on authored runs. It is a
``networkx.MultiDiGraph`` whose nodes are the run's steps (keyed by ``step_idx``) and whose
edges are the store's ``edges`` rows (keyed by ``kind``: Who&When has both a ``context`` and a
``handoff`` edge from step i to i+1, and they mean different things).

Marks on every step node, and why they are separate attributes:

- ``truth``: ``anomaly`` / ``normal`` / ``unlabeled`` from the step label. Unlabeled is its own
  value, never folded into normal (a nightmare SELECT_PUZZLE the runner left unverified is not
  a success).
- ``decisive``: the human decisive step (Who&When's ``mistake_step``, label source
  ``human_decisive_step``), the one step a judge is asked to find; or an anomalous step your
  own labels call decisive (a row's ``decisive`` column, which ``explorer_steps`` carries).
- ``flagged`` / ``outcome``: a prediction set's decision at a chosen rule (the top-k steps of
  the run by rank, or a score cut), and its confusion cell against the truth: ``TP``, ``FP``,
  ``FN``, ``TN``; ``None`` on an unlabeled step, which can be flagged but is neither right nor
  wrong.
- ``role`` / ``chain_length``: the step's place in its scope's propagation chain
  (``origin``/``mid``/``down``, or ``None``) and the length of that chain (0 when the scope
  forms none), as the store writer stored them (``auditatlas.chains`` states the rule).

Long runs are shown first with each scope contracted to one node (:func:`collapse`); the
contracted node keeps the counts a reader needs to decide which scope to open.

Each step also carries its ``lane``, the row :func:`layout` draws it on: its scope (the
default), or its agent (``lanes="agent"``): a run that is one scope, as every run of a trace
corpus is (OTLP, ATIF, Who&When, tau-bench), then reads as one row per agent, the hand-offs
between the rows. Collapsing still works by scope.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # networkx is imported where a graph is built: the view declarations import this module
    import networkx as nx

from .chains import run_chains

ANOMALY, NORMAL, UNLABELED = "anomaly", "normal", "unlabeled"
TP, FP, FN, TN = "TP", "FP", "FN", "TN"
OUTCOMES: tuple[str, ...] = (TP, FP, FN, TN)
DECISIVE_SOURCE = "human_decisive_step"
# Edge kinds a reader does not need at first sight: Who&When's "every step saw the whole
# earlier history" edges (n(n-1)/2 of them) hide the hand-off chain they sit on.
INFERRED_CONTEXT_KIND = "context"
# Above this many steps a run opens with each scope collapsed to one node.
COLLAPSE_ABOVE = 300
# What a graph lane is: a step's scope, or its agent.
LANES = ("scope", "agent")
NO_AGENT = "—"  # the lane of a step whose agent the trace did not record

STEP_FIELDS = ("step_id", "agent", "action", "scope", "label", "label_source", "error_code",
               "failure_mode", "is_cascade", "is_tool", "is_format_error")


@dataclass(frozen=True)
class DecisionRule:
    """How a prediction set's scores become flags: the run's ``top_k`` steps, ``score >=
    threshold``, or (``own``) the set's own decisions, its ``pred_label``: the rule the
    Detectors page lists a set's errors by, so a step followed from there keeps its verdict."""

    top_k: int | None = None
    threshold: float | None = None
    own: bool = False

    def __post_init__(self) -> None:
        if sum((self.top_k is not None, self.threshold is not None, bool(self.own))) != 1:
            raise ValueError("a decision rule needs exactly one of top_k, threshold and own")
        if self.top_k is not None and self.top_k < 0:
            raise ValueError("top_k must be 0 or more")

    def flagged(self, scores: Iterable[tuple]) -> set[int]:
        """Flagged step indices from ``(step_idx, score, rank[, pred_label])`` rows of one run.

        ``rank`` is the store's (1 = highest score, ties to the earlier step), so top-k is
        exactly k steps whenever the run has k scored steps.
        """
        if self.own:
            return {int(row[0]) for row in scores if len(row) > 3 and _finite(row[3]) and int(row[3]) == 1}
        if self.top_k is not None:
            return {int(row[0]) for row in scores if row[2] is not None and _finite(row[2]) and row[2] <= self.top_k}
        return {int(row[0]) for row in scores if row[1] is not None and _finite(row[1]) and row[1] >= self.threshold}

    def describe(self) -> str:
        if self.own:
            return "its own decisions (pred_label)"
        return f"top {self.top_k} steps of the run" if self.top_k is not None else f"score ≥ {self.threshold:g}"


def _finite(x: Any) -> bool:
    try:
        return x == x and abs(float(x)) != float("inf")
    except (TypeError, ValueError):
        return False


def truth_of(label: Any) -> str:
    """``anomaly`` for 1, ``normal`` for 0, ``unlabeled`` for null (NaN/NA/None)."""
    if label is None or not _finite(label):
        return UNLABELED
    return ANOMALY if int(label) == 1 else NORMAL


def outcome_of(truth: str, flagged: bool) -> str | None:
    """The confusion cell of one step; ``None`` when the step is unlabeled."""
    if truth == UNLABELED:
        return None
    if truth == ANOMALY:
        return TP if flagged else FN
    return FP if flagged else TN


def _records(rows: Any) -> list[dict]:
    """Rows as dicts, from a DataFrame or any iterable of mappings."""
    if hasattr(rows, "to_dict"):
        return rows.to_dict("records")
    return [dict(r) for r in rows]


def _clean(value: Any) -> Any:
    """pandas' missing values (NaN, NA, NaT) as None, numpy scalars as Python ones."""
    if value is None:
        return None
    try:
        if value != value:  # NaN
            return None
    except (TypeError, ValueError):  # pd.NA compares ambiguously
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def build(steps: Any, edges: Any, run_id: str | None = None, lanes: str = "scope") -> nx.MultiDiGraph:
    """The run's graph: one node per step (trace order), one edge per ``edges`` row; ``lanes``
    (one of :data:`LANES`) says which field puts a step on its lane.

    ``steps`` rows need ``step_idx`` and may carry the :data:`STEP_FIELDS`; ``edges`` rows
    need ``src_idx``, ``dst_idx``, ``kind``, ``provenance``. A step without a scope is in the
    run's own scope. Ground truth, the decisive step and chain roles are set here because they
    come from the steps alone: the roles as stored (``chain_role``, ``chain_length``, which
    ``explorer_steps`` carries), else from the rule itself for rows that do not come from the
    store.
    """
    if lanes not in LANES:
        raise ValueError(f"lanes must be one of {LANES}")
    import networkx as nx

    graph = nx.MultiDiGraph(run_id=run_id, lanes=lanes)
    rows = sorted(_records(steps), key=lambda r: int(r["step_idx"]))
    for row in rows:
        idx = int(row["step_idx"])
        attrs = {f: _clean(row.get(f)) for f in STEP_FIELDS}
        attrs["scope"] = attrs["scope"] if attrs["scope"] is not None else (run_id or "run")
        label = attrs["label"]
        attrs["truth"] = truth_of(label)
        attrs["decisive"] = attrs["truth"] == ANOMALY and (attrs.get("label_source") == DECISIVE_SOURCE
                                                           or _clean(row.get("decisive")) is True)
        attrs["lane"] = attrs["scope"] if lanes == "scope" else (attrs["agent"] or NO_AGENT)
        graph.add_node(idx, step_idx=idx, kind="step", **attrs)
    for idx, (role, length) in _chain_marks(rows).items():
        graph.nodes[idx]["role"] = role
        graph.nodes[idx]["chain_length"] = length
    for row in _records(edges):
        src, dst = int(row["src_idx"]), int(row["dst_idx"])
        if src not in graph or dst not in graph:
            continue  # an edge to a step this graph does not hold (never in a valid store)
        kind = _clean(row.get("kind")) or "edge"
        graph.add_edge(src, dst, key=kind, kind=kind, provenance=_clean(row.get("provenance")) or "observed")
    return graph


def _chain_marks(rows: list[dict]) -> dict[int, tuple[str | None, int]]:
    """``{step_idx: (chain role, chain length)}``: as stored, or by the rule for other rows."""
    if rows and all("chain_role" in r and "chain_length" in r for r in rows):
        return {int(r["step_idx"]): (_clean(r["chain_role"]), int(_clean(r["chain_length"]) or 0)) for r in rows}
    return run_chains((int(r["step_idx"]), _clean(r.get("scope")),
                       1 if truth_of(_clean(r.get("label"))) == ANOMALY else None) for r in rows)


def mark(graph: nx.MultiDiGraph, scores: Any = None, rule: DecisionRule | None = None) -> nx.MultiDiGraph:
    """Set each step's score, rank, flag and confusion cell from one prediction set, in place.

    ``scores`` rows carry ``step_idx``, ``score`` and ``rank`` for this run; without scores
    or a rule, nothing is flagged and every outcome is ``None`` (no detector chosen).
    """
    rows = [(int(r["step_idx"]), _clean(r.get("score")), _clean(r.get("rank")), _clean(r.get("pred_label")))
            for r in _records(scores)] if scores is not None else []
    by_step = {i: (s, k) for i, s, k, _ in rows}
    flagged = rule.flagged(rows) if rule is not None and rows else set()
    chosen = rule is not None and bool(rows)
    for n, d in graph.nodes(data=True):
        if d.get("kind") != "step":
            continue
        d["score"], d["rank"] = by_step.get(n, (None, None))
        d["flagged"] = n in flagged
        d["outcome"] = outcome_of(d["truth"], d["flagged"]) if chosen else None
    return graph


def confusion(graph: nx.MultiDiGraph) -> dict[str, int]:
    """TP/FP/FN/TN counts over the step nodes, plus flagged steps that are unlabeled."""
    counts = dict.fromkeys(OUTCOMES, 0)
    counts["flagged_unlabeled"] = 0
    for _, d in graph.nodes(data=True):
        if d.get("kind") != "step":
            continue
        if d.get("outcome") in counts:
            counts[d["outcome"]] += 1
        elif d.get("flagged") and d.get("truth") == UNLABELED:
            counts["flagged_unlabeled"] += 1
    return counts


def visible(graph: nx.MultiDiGraph, show_inferred_context: bool = False) -> nx.MultiDiGraph:
    """The graph as first drawn: inferred full-context edges only when asked for."""
    if show_inferred_context:
        return graph
    hidden = [(u, v, k) for u, v, k, d in graph.edges(keys=True, data=True)
              if d.get("kind") == INFERRED_CONTEXT_KIND and d.get("provenance") == "inferred"]
    if not hidden:
        return graph
    view = graph.copy()
    view.remove_edges_from(hidden)
    return view


def scopes_in_order(graph: nx.MultiDiGraph) -> list[str]:
    """Scopes by their first step (the order a reader meets them)."""
    first: dict[str, int] = {}
    for n, d in graph.nodes(data=True):
        if d.get("kind") == "step":
            first.setdefault(d["scope"], n)
            first[d["scope"]] = min(first[d["scope"]], n)
    return sorted(first, key=first.get)


def scope_node_id(scope: str) -> str:
    return f"scope:{scope}"


def collapse(graph: nx.MultiDiGraph, scopes: Iterable[str]) -> nx.MultiDiGraph:
    """A copy where the steps of each scope in ``scopes`` become one scope node.

    The scope node (id ``scope:<name>``) carries its step range and counts; edges from or to
    its steps are merged per (source, target, kind, provenance) with a ``count``, and edges
    inside the scope disappear.
    """
    scopes = set(scopes)
    if not scopes:
        return graph
    into: dict[Any, Any] = {}
    import networkx as nx

    out = nx.MultiDiGraph(**graph.graph)
    members: dict[str, list[tuple[int, dict]]] = {}
    for n, d in graph.nodes(data=True):
        if d.get("kind") == "step" and d["scope"] in scopes:
            members.setdefault(d["scope"], []).append((n, d))
            into[n] = scope_node_id(d["scope"])
        else:
            out.add_node(n, **d)
            into[n] = n
    for scope, steps in members.items():
        out.add_node(scope_node_id(scope), **_scope_summary(scope, steps))
    for u, v, d in graph.edges(data=True):
        a, b = into[u], into[v]
        if a == b:
            continue
        key = (d.get("kind"), d.get("provenance"))
        if out.has_edge(a, b, key=key):
            out.edges[a, b, key]["count"] += 1
        else:
            out.add_edge(a, b, key=key, kind=d.get("kind"), provenance=d.get("provenance"), count=1)
    return out


def _scope_summary(scope: str, steps: list[tuple[int, dict]]) -> dict:
    idx = [n for n, _ in steps]
    truths = [d["truth"] for _, d in steps]
    outcomes = [d.get("outcome") for _, d in steps]
    return {
        "kind": "scope",
        "scope": scope,
        "first_idx": min(idx),
        "last_idx": max(idx),
        "n_steps": len(idx),
        "n_anomalies": truths.count(ANOMALY),
        "n_unlabeled": truths.count(UNLABELED),
        "n_flagged": sum(1 for _, d in steps if d.get("flagged")),
        "outcomes": {o: outcomes.count(o) for o in OUTCOMES if outcomes.count(o)},
        "decisive": any(d.get("decisive") for _, d in steps),
        # Truth of the group: an anomaly inside shows as such; otherwise unlabeled steps
        # keep the group from reading as all-normal.
        "truth": ANOMALY if ANOMALY in truths else (UNLABELED if UNLABELED in truths else NORMAL),
    }


def default_collapsed(graph: nx.MultiDiGraph, keep_open: Iterable[str] = ()) -> list[str]:
    """Scopes collapsed at first sight: all of them when the run has over COLLAPSE_ABOVE steps
    (except ``keep_open``, e.g. the scope of a step a link points at), none otherwise."""
    n_steps = sum(1 for _, d in graph.nodes(data=True) if d.get("kind") == "step")
    if n_steps <= COLLAPSE_ABOVE:
        return []
    keep = set(keep_open)
    return [s for s in scopes_in_order(graph) if s not in keep]


COLLAPSED_LANE = "\x00collapsed"  # the lane every collapsed scope shares (no scope is named so)
SCOPE_COLUMNS = 3  # columns a collapsed scope's box takes in the layout


def layout(graph: nx.MultiDiGraph, dx: float = 110.0, dy: float = 120.0,
           pack: bool = False) -> dict[Any, tuple[float, float]]:
    """Positions: trace order left to right, one horizontal lane per open scope, or agent (the
    steps' ``lane``, see :func:`build`), in order met.

    Collapsed scopes share one lane on top, each at its first step's column, so a long run
    folded into forty scopes reads as one row instead of a forty-lane staircase; steps and
    groups keep their trace order either way.

    ``pack``: when the scopes take turns (:func:`lanes_take_turns`: a puzzle, then the next),
    the run reads like lines of text, one scope a line from the left edge (collapsed scopes in
    a row side by side), instead of a staircase as wide as the whole trace. Scopes that overlap
    in time keep their common columns (a step above another happened at the same point).
    """
    lanes = {s: i for i, s in enumerate(_lane_order(graph))}
    columns = sorted(graph.nodes, key=lambda n: _column_key(graph.nodes[n]))
    pos = {}
    cursor = 0.0
    for n in columns:
        d = graph.nodes[n]
        if d.get("kind") == "scope":  # a scope box is wider than a step: it takes SCOPE_COLUMNS
            pos[n] = (cursor + dx * (SCOPE_COLUMNS - 1) / 2, lanes[_lane(d)] * dy)
            cursor += dx * SCOPE_COLUMNS
        else:
            pos[n] = (cursor, lanes[_lane(d)] * dy)
            cursor += dx
    if pack and lanes_take_turns(graph):
        pos = _lines(graph, pos, dx, dy)
    return pos


def _lines(graph: nx.MultiDiGraph, pos: dict[Any, tuple[float, float]], dx: float,
           dy: float) -> dict[Any, tuple[float, float]]:
    """``pos`` as lines of text: each stretch of the trace on one lane (an open scope, or
    collapsed scopes side by side) a line of its own from the left edge, lines in trace order."""
    half_box = dx * (SCOPE_COLUMNS - 1) / 2  # a box's position is its centre: its left edge is this much left
    line, lane, left, out = -1, None, 0.0, {}
    for n in sorted(pos, key=lambda m: pos[m][0]):
        edge = pos[n][0] - half_box if graph.nodes[n].get("kind") == "scope" else pos[n][0]
        if _lane(graph.nodes[n]) != lane:
            line, lane, left = line + 1, _lane(graph.nodes[n]), edge
        out[n] = (pos[n][0] - left, line * dy)
    return out


def lanes_take_turns(graph: nx.MultiDiGraph) -> bool:
    """True when no two lanes overlap in trace order: each lane's steps form one unbroken
    stretch of the trace (MAADBench's puzzles, one after another; a collapsed scope; any run
    with a single scope; agents that each act once in turn), so the run can be drawn as lines
    of text."""
    spans: dict[tuple[str, str], list[int]] = {}
    for _, d in graph.nodes(data=True):
        lo, hi = _column_key(d), d["last_idx"] if d.get("kind") == "scope" else d["step_idx"]
        key = ("box", d["scope"]) if d.get("kind") == "scope" else ("lane", _lane(d))
        span = spans.setdefault(key, [lo, hi])
        span[0], span[1] = min(span[0], lo), max(span[1], hi)
    ordered = sorted(spans.values())
    return all(prev[1] < nxt[0] for prev, nxt in zip(ordered, ordered[1:]))


def _lane(d: Mapping) -> str:
    return COLLAPSED_LANE if d.get("kind") == "scope" else d.get("lane", d["scope"])


def _column_key(d: Mapping) -> int:
    return d["step_idx"] if d.get("kind") == "step" else d["first_idx"]


def _lane_order(graph: nx.MultiDiGraph) -> list[str]:
    first: dict[str, int] = {}
    for _, d in graph.nodes(data=True):
        k, lane = _column_key(d), _lane(d)
        if lane not in first or k < first[lane]:
            first[lane] = k
    order = sorted(first, key=first.get)
    if COLLAPSED_LANE in first:  # the folded scopes on top, the open ones below in order met
        order.remove(COLLAPSED_LANE)
        order.insert(0, COLLAPSED_LANE)
    return order


def lane_count(graph: nx.MultiDiGraph) -> int:
    """How many lanes :func:`layout` draws."""
    return len(_lane_order(graph))


def chain_length(graph: nx.MultiDiGraph) -> int:
    """The run's longest chain (its steps' largest ``chain_length``); 0 when it has none."""
    return max((int(d.get("chain_length") or 0) for _, d in graph.nodes(data=True) if d.get("kind") == "step"),
               default=0)
