"""One board entrant: what a board row is before it is scored.

Every board declares its entrants in one ordered tuple of ``Entrant`` (the published board's
order), ``Board.entrants`` in its own declaration (``board_pre.BOARD``,
``board_detection.POST_BOARD`` and ``LIVE_BOARD``, ``board_localization.BOARD``). Stored
prediction sets join as entrants of their own at run time. A contrast family picks its members by ``role`` and ``kind``, never by name, so adding
an entrant to a list is all it takes to contrast it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# How a board reads a row: the floor every entrant is read against, a baseline shown for
# reference (and contrasted against where a family says so), an ordinary entrant, or an extra
# row that is not part of the published board (addenda, stored sets, an analytic expectation).
ROLES: tuple[str, ...] = ("floor", "baseline", "entrant", "extra")


@dataclass(frozen=True)
class Entrant:
    """A board entrant: its name on the board, its ``role`` (one of ``ROLES``), its ``kind``
    (what it is: "random", "size", "structure", "rule", "judge", "prediction set", ...), and
    its ``scorer``, which the board that declares it knows how to run (a ``RunScorer`` on the
    run-level boards; a function from a configuration to its flagged capabilities on PRE)."""

    name: str
    role: str = "entrant"
    kind: str = "prediction set"
    scorer: Any = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"entrant '{self.name}': role must be one of {', '.join(ROLES)}, not {self.role!r}.")
