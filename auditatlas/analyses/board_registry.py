"""Boards: PRE, LIVE and POST tables regenerated from the predictions in the store.

A board is data (``Board``): the task it scores (pillar, granularity, corpus), its metrics, the
floor every entrant is read against, its entrants (declared in one ordered list of
``entrant.Entrant``, plus one per stored prediction set the store holds), and its declared
contrast families. Scoring an entrant gives a ``BoardRow`` with the per-item values the paired
tests need; a contrast family picks its rows by role and kind, never by name, so adding an
entrant touches only its board's list and adding a board only ``registry`` below, never a page
or the CLI.

Why per-item values: every entrant scores the same items (runs, configs), so the statistics
are paired (McNemar on hits, Wilcoxon on reciprocal ranks, DeLong on scores, a cluster
bootstrap on PRE flags); a board without them could only print numbers, not say which
differences are real.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import Query
from .board_seeds import entries
from .board_types import (  # noqa: F401 - the boards' types, where callers have always found them
    BAND_RANKS,
    PILLARS,
    Board,
    BoardResult,
    BoardRow,
    ContrastFamily,
    Task,
    band_order,
    band_rank,
    bands,
    contrasts_for,
    row_bands,
    top_group,
)


def registry() -> dict[str, Board]:
    """All boards by CLI name, in lifecycle order (PRE, LIVE, POST)."""
    from . import board_detection, board_localization, board_pre

    boards = [board_pre.BOARD, board_detection.LIVE_BOARD, board_localization.BOARD, board_detection.POST_BOARD]
    return {b.name: b for b in boards}


def run_board(name: str, query: Query, corpus: str | None = None, slice_: dict | None = None) -> BoardResult:
    """Compute board ``name`` on ``corpus`` (default: the first corpus it applies to), reading the
    store through ``query``."""
    from ..errors import AtlasError

    boards = registry()
    if name not in boards:
        raise AtlasError(f"unknown board '{name}'; choose one of: {', '.join(boards)}.")
    board = boards[name]
    available = board.corpora(query)
    if corpus is None:
        if not available:
            raise AtlasError(f"board '{name}' needs a corpus that is not in the store ({board.item_kind} of the kind it scores).")
        corpus = available[0]
    elif corpus not in available:
        have = ", ".join(available) or "none"
        raise AtlasError(f"board '{name}' cannot be computed on corpus '{corpus}' in this store: it needs {board.needs}, "
                         f"which that corpus lacks (available: {have}).")
    return board.compute(query, corpus, slice_ if board.allows_slice else None)


def slice_lacks(board: Board, slice_: dict | None, available: Sequence[str]) -> str | None:
    """One sentence when the slice names only corpora this board cannot score (an unlabeled
    corpus of your own traces, one without outcomes), saying what they lack; else None."""
    named = [str(c) for c in (slice_ or {}).get("corpus") or []]
    if not board.allows_slice or not named or any(c in available for c in named):
        return None
    which = ", ".join(f"'{c}'" for c in named)
    noun = "corpus" if len(named) == 1 else "corpora"
    return (f"The {board.name} board needs {board.needs}, which the slice's {noun} {which} "
            f"{'lacks' if len(named) == 1 else 'lack'}"
            + (f"; it can score {', '.join(available)}." if available else "."))


def board_json(result: BoardResult) -> dict[str, Any]:
    """The board for scripts (``auditatlas board --json``): every row with its metrics flat
    (``row["f1"]``), its 95% intervals and how they are made, a re-scored detector's seeds
    also as one group (mean, sd, min, max over seeds; the span of their intervals), and the
    extra tables (PRE's F1 by source, with its bounds)."""
    groups = [e for e in entries(result, group=True) if e.members]
    return {
        "board": result.board,
        "corpus": result.corpus,
        "n_items": result.n_items,
        "item_kind": result.item_kind,
        "floor": result.floor,
        "rows": [{"entrant": r.entrant, **{k: _num(v) for k, v in r.metrics.items()},
                  "intervals": _intervals(r.intervals), "role": r.role, "n_items": int(r.n_items),
                  "seed_group": r.seed_group, "seed": r.seed} for r in result.rows],
        "seed_groups": [{"entrant": e.entrant, "seeds": list(e.seeds), "rows": list(e.members),
                         **{m: {"mean": _num(s.mean), "sd": _num(s.sd), "min": _num(s.low), "max": _num(s.high)}
                            for m, s in e.spreads.items()},
                         "intervals": _intervals(e.intervals)} for e in groups],
        "interval_methods": dict(result.interval_methods),
        "top_group": _top_json(result),
        "extra_tables": {name: [{k: _num(v) for k, v in row.items()} for row in rows]
                         for name, rows in result.extra_tables.items()},
    }


def _top_json(result: BoardResult) -> dict[str, Any] | None:
    found = top_group(result)
    if found is None:
        return None
    return {"metric": found.metric, "leader": found.leader, "members": list(found.members),
            "untested": list(found.untested), "test": found.test}


def _intervals(intervals: dict[str, list[float]]) -> dict[str, list[float | None]]:
    return {m: [_num(float(v)) for v in iv] for m, iv in intervals.items()}


def _num(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 6)
    if isinstance(value, np.integer):
        return int(value)
    return value
