"""MAADBench's dependency edges: how the public runner wires one room's steps together.

Spec: ``shared/specs/maadbench.md``. Kept apart from the converter (``maadbench.py``) because
the wiring is a model of the runner's pipeline, not a reading of the file's fields.

Edges (``src_idx < dst_idx`` always)
    Within a puzzle, the runner's pipeline wiring, ``kind="data"``, ``provenance="observed"``:
    SOLVE_CLUE <- OBSERVE_CLUE; OBSERVE_ITEM <- SOLVE_CLUE; APPLY_DELTA <- OBSERVE_ITEM;
    UNIT_TOOL_CALL <- OBSERVE_ITEM; OBSERVE_PUZZLE <- OBSERVE_CLUE, OBSERVE_ITEM, APPLY_DELTA;
    OBSERVE_(PLANNED_)CLUE <- SELECT_PUZZLE. Each input is the latest earlier step of that
    action on the same puzzle. A tool call feeds its parent APPLY_DELTA (``kind="tool_parent"``)
    found by ``parent_action_id`` (observed) or, failing that, the next APPLY_DELTA of the
    puzzle (inferred). Across puzzles, the previous puzzle's last step feeds the next puzzle's
    first step (``kind="puzzle_sequence"``, ``provenance="modeled"``: the runner reveals
    puzzles in sequence, but no message is passed).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..actions import APPLY_DELTA, BY_SHORT, TOOL_CALL


class ParentCounts(Protocol):
    """Where :func:`run_edges` counts tool calls linked by inference or left unlinked."""

    inferred_parents: int
    dropped_parents: int


# dst action -> the actions whose output it reads within the same puzzle (normalised names):
# the runner's pipeline wiring, by the short names of ``auditatlas.actions``.
_WIRING: dict[str, tuple[str, ...]] = {
    "OC": ("SP",),  # nightmare only: no SELECT_PUZZLE elsewhere
    "SC": ("OC",),
    "OI": ("SC",),
    "TC": ("OI",),
    "AD": ("OI",),
    "OP": ("OC", "OI", "AD"),
}
DATA_INPUTS: dict[str, tuple[str, ...]] = {
    BY_SHORT[dst].code: tuple(BY_SHORT[src].code for src in srcs) for dst, srcs in _WIRING.items()
}


def run_edges(
    actions: list[str],
    scopes: list[str | None],
    step_ids: list[str | None],
    parents: list[str | None],
    out: ParentCounts,
) -> list[tuple[int, int, str, str]]:
    """Every edge of one run as ``(src_idx, dst_idx, kind, provenance)``; ``out`` counts the
    tool calls whose parent was inferred or could not be found."""
    edges: list[tuple[int, int, str, str]] = []
    latest: dict[tuple[str, str], int] = {}
    for i, (action, scope) in enumerate(zip(actions, scopes)):
        if scope is None:
            continue  # without a puzzle there is no pipeline to wire
        for src_action in DATA_INPUTS.get(action, ()):
            j = latest.get((scope, src_action))
            if j is not None:
                edges.append((j, i, "data", "observed"))
        latest[(scope, action)] = i
    edges.extend(_tool_parent_edges(actions, scopes, step_ids, parents, out))
    edges.extend(_puzzle_sequence_edges(scopes))
    return edges


def _tool_parent_edges(
    actions: list[str],
    scopes: list[str | None],
    step_ids: list[str | None],
    parents: list[str | None],
    out: ParentCounts,
) -> Iterator[tuple[int, int, str, str]]:
    """Tool call -> its APPLY_DELTA; the runner places the call before its parent."""
    index = {sid: i for i, sid in enumerate(step_ids) if sid}
    for i, action in enumerate(actions):
        if action != TOOL_CALL:
            continue
        parent = index.get(parents[i]) if parents[i] else None
        if parent is not None and parent > i:
            yield i, parent, "tool_parent", "observed"
            continue
        later = next((j for j in range(i + 1, len(actions))
                      if actions[j] == APPLY_DELTA and scopes[j] == scopes[i]), None)
        if later is None:
            out.dropped_parents += 1
        else:
            out.inferred_parents += 1
            yield i, later, "tool_parent", "inferred"


def _puzzle_sequence_edges(scopes: list[str | None]) -> Iterator[tuple[int, int, str, str]]:
    for i in range(1, len(scopes)):
        if scopes[i] != scopes[i - 1]:
            yield i - 1, i, "puzzle_sequence", "modeled"


def parent_notes(counters: dict[str, int]) -> list[str]:
    """What an ingest tells the user about tool calls the wiring linked by inference, or not at all."""
    notes = []
    if counters.get("inferred_parents"):
        notes.append(f"{counters['inferred_parents']} tool call(s) had no usable parent_action_id; linked to the "
                     "next APPLY_DELTA of their puzzle (provenance 'inferred').")
    if counters.get("dropped_parents"):
        notes.append(f"{counters['dropped_parents']} tool call(s) had no later APPLY_DELTA to link to.")
    return notes
