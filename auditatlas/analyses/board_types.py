"""The boards' shared types: what a board is (``Board``, its ``Task``), what scoring it gives
(``BoardResult`` of ``BoardRow``), its declared contrast families and the bands a board's rows
fall into. Their own module so the boards, their seed grouping and the registry that lists the
boards all import them, and none imports another.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..stats import Contrast, adjust_family
from . import Query
from .entrant import Entrant

PILLARS = ("PRE", "LIVE", "POST")
# A contrast family's ``against`` that names no role: the member row with the best value of the
# family's metric, so the family asks which entrants the leader beats (the board's top group).
LEADER = "leader"


@dataclass(frozen=True)
class Task:
    """What a board scores: the information state, the unit of prediction, the corpus."""

    pillar: str  # PRE | LIVE | POST
    granularity: str  # config | run | step
    corpus: str | None  # None: any corpus that has what the board needs


@dataclass
class BoardRow:
    """One board row: a scored entrant's metrics plus the per-item values behind them."""

    entrant: str  # the entrant's name
    metrics: dict[str, float | None]
    items: dict[str, np.ndarray] = field(default_factory=dict)  # e.g. hit1, hit3, rr, score
    n_items: int = 0
    coverage: float = 1.0
    role: str = "entrant"  # the entrant's role: floor | baseline | entrant | extra
    note: str = ""
    kind: str = "prediction set"  # the entrant's kind (entrant.Entrant.kind)
    # The re-scored detector this row is one seed of (``board_seeds.seed_group``), and that
    # seed; None for a row of its own (a released set, a computed entrant). The board shows
    # one entrant per seed group, its seeds' rows on demand.
    seed_group: str | None = None
    seed: int | None = None
    # Each compared metric's 95% interval, [low, high] (lists: the kept board is JSON); a
    # metric without one (an analytic expectation, an undefined value) is absent.
    # ``BoardResult.interval_methods`` says how each metric's interval is made.
    intervals: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class ContrastFamily:
    """A declared question: contrasts of every row whose role is in ``members`` (and, when
    ``kinds`` is given, whose kind is in it) against the row holding role ``against``.

    Roles and kinds come from the entrant declarations, so a new entrant joins the families its
    role and kind say, without being named here. Holm adjustment runs within the family, so
    each family controls its own error rate.
    """

    name: str
    metric: str
    test: str  # mcnemar | wilcoxon | delong | cluster_bootstrap
    against: str  # a role: the first row in board order holding it (the floor, or the baseline)
    members: tuple[str, ...]  # roles
    kinds: tuple[str, ...] = ()  # kinds; empty: any kind
    short: str = ""  # the family in a word or two, for a board line's contrasts cell

    @property
    def label(self) -> str:
        return self.short or self.name

    def admits(self, row: BoardRow) -> bool:
        return row.role in self.members and (not self.kinds or row.kind in self.kinds)


@dataclass
class BoardResult:
    board: str
    title: str
    pillar: str
    corpus: str
    metrics: tuple[str, ...]
    floor: str
    n_items: int
    item_kind: str
    rows: list[BoardRow]
    contrasts: list[Contrast] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra_tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # An extra table's line under its title (how its intervals are made), by the table's name.
    extra_captions: dict[str, str] = field(default_factory=dict)
    primary_metric: str | None = None  # the metric rows are ordered by
    primary_contrast_family: str | None = None  # the contrast family that decides that order
    leader_family: str | None = None  # the family contrasting every member with the leader (``top_group``)
    family_labels: dict[str, str] = field(default_factory=dict)  # family name -> its short label
    # Entrants scoring only part of the board's items: one ``board_seeds.Coverage`` each. The
    # board says them in one line (``board_seeds.coverage_line``), the list on demand.
    coverage: list[Any] = field(default_factory=list)
    # metric -> how its 95% interval is made, in a sentence a reviewer reads on the page.
    interval_methods: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Board:
    """A board as data. ``entrants`` is the one declaration of what it scores, in board order
    (``entrant.Entrant``: name, role, kind, scorer); the stored prediction sets of the corpus
    join them when it is computed. The floor is the entrant whose role says so."""

    name: str
    title: str
    task: Task
    metrics: tuple[str, ...]
    item_kind: str  # what one item is, said on screen ("failed runs", "(config, capability) pairs")
    compute: Callable[[Query, str, dict | None], BoardResult]
    corpora: Callable[[Query], list[str]]  # corpora in the store this board can be computed on
    entrants: tuple[Entrant, ...]
    allows_slice: bool = True
    # What a corpus must hold for the board, said when one lacks it ("runs of both outcomes").
    needs: str = "what it scores"

    def __post_init__(self) -> None:
        floors = [e.name for e in self.entrants if e.role == "floor"]
        if len(floors) != 1:
            raise ValueError(f"board '{self.name}' declares {len(floors)} floor entrants; it needs exactly one.")

    @property
    def floor(self) -> str:
        return next(e.name for e in self.entrants if e.role == "floor")

    def entrant(self, name: str) -> Entrant | None:
        """The declared entrant called ``name``, or None (a stored prediction set)."""
        return next((e for e in self.entrants if e.name == name), None)


def contrasts_for(rows: Sequence[BoardRow], families: Sequence[ContrastFamily],
                  tests: dict[str, Callable]) -> list[Contrast]:
    """Run every declared contrast family on ``rows`` and Holm-adjust within each family.

    A row without per-item values (an analytic expectation) cannot be paired, so no family
    contrasts it.
    """
    out: list[Contrast] = []
    for fam in families:
        if fam.against == LEADER:
            base = _leader(rows, fam)
        else:
            base = next((r for r in rows if r.role == fam.against), None)
        if base is None:
            continue
        for row in rows:
            if row is base or not row.items or not fam.admits(row):
                continue
            out.append(tests[fam.test](fam, row, base))
    return adjust_family(out)


BAND_RANKS = {"above": 0, "reference": 1, "not contrasted": 1, "unresolved": 2, "below": 3}


def band_rank(band: str) -> int:
    """Where a band sits in board order: above the reference, the reference, unresolved, below."""
    return BAND_RANKS.get(band.split(" ")[0], BAND_RANKS.get(band, 2))


def row_bands(result: BoardResult) -> dict[str, str]:
    """Each row's band, decided by the primary contrast family (see ``bands``)."""
    verdicts = {c.a_name: c for c in result.contrasts if c.family == result.primary_contrast_family}
    out = {}
    for row in result.rows:
        c = verdicts.get(row.entrant)
        if c is None:
            out[row.entrant] = "reference" if row.role in ("floor", "baseline") else "not contrasted"
        elif c.verdict == "separates":
            out[row.entrant] = f"above {c.b_name}" if c.diff > 0 else f"below {c.b_name}"
        else:
            out[row.entrant] = f"unresolved vs {c.b_name}"
    return out


def band_order(band: str, value: Any, name: str) -> tuple:
    """Sort key of a board line: its band's rank, then (except in the unresolved band, which
    claims no order) the primary metric, higher first, then the name."""
    rank = band_rank(band)
    number = -(value if isinstance(value, (int, float)) and value == value else -1e9)
    return rank, number if rank in (0, 1, 3) else 0, name


def bands(result: BoardResult) -> list[dict[str, Any]]:
    """Rows in display order with their band, decided by the primary contrast family.

    A row is ordered only where its Holm-adjusted contrast separates it from the family's
    reference: above it (ordered by the primary metric), or below it. Rows no contrast
    separates share one "unresolved" band in name order: the board does not claim an order
    it cannot support.
    """
    metric = result.primary_metric or (result.metrics[0] if result.metrics else None)
    placed = row_bands(result)
    rows = sorted(result.rows, key=lambda r: band_order(placed[r.entrant], r.metrics.get(metric) if metric else None,
                                                        r.entrant))
    return [{"entrant": r.entrant, "band": placed[r.entrant]} for r in rows]


def _leader(rows: Sequence[BoardRow], fam: ContrastFamily) -> BoardRow | None:
    """The member row (with per-item values) whose value of the family's metric is highest."""
    scored = [r for r in rows if r.items and fam.admits(r) and _is_number(r.metrics.get(fam.metric))]
    return max(scored, key=lambda r: r.metrics[fam.metric], default=None)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.floating)) and value == value


@dataclass(frozen=True)
class TopGroup:
    """Who wins a board: the leader (best value of the family's metric) and every entrant no
    Holm-adjusted paired contrast separates from it; ``untested``: members the test could not
    pair with the leader (they are in neither list)."""

    metric: str
    leader: str
    members: tuple[str, ...]  # the leader first, then the rest in board order
    untested: tuple[str, ...]
    test: str


def top_group(result: BoardResult) -> TopGroup | None:
    """The board's top group from its leader family's contrasts; None without one."""
    family = [c for c in result.contrasts if c.family == result.leader_family]
    if not family:
        return None
    leader = family[0].b_name
    members, untested = [leader], []
    for c in family:
        if c.p is None or not math.isfinite(c.p):
            untested.append(c.a_name)
        elif c.verdict != "separates":
            members.append(c.a_name)
    # The leader family contrasts on the board's primary metric (each board declares it so).
    return TopGroup(result.primary_metric or "", leader, tuple(members), tuple(untested), family[0].test)
