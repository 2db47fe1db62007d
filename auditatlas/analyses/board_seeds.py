"""Boards a reviewer reads: a re-scored detector's seeds as one entrant, coverage in one line.

A re-score fits one detector on one feature set once per seed, and each fit is a prediction
set of its own, so a board scores every seed as a row (a standard panel is every registry
detector times its seeds). The CatchBench paper reports such a detector once, as its mean over seeds
with their spread; so does the board: ``entries`` turns a board's rows into the lines it shows,
one per seed group (mean ± sample standard deviation, ddof=1, and the min–max range over the
seeds) and one per other row, exactly as scored. Released prediction sets are never grouped:
their published values stay beside their own rows.

A group's band and contrasts summarise its seeds' own: each seed is contrasted as it always
was (the per-seed rows, one click away, carry the tests); the group says in how many seeds
each family's contrast separates, and takes a band only where every seed has the same one.

No Streamlit here; the boards fill ``BoardRow.seed_group`` from the sets' metadata.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..schema import missing
from ..stats import SD_DDOF, VERDICTS, Spread, spread  # noqa: F401 - the seeds' spread, where the boards find it
from .board_intervals import span as interval_span
from .board_types import BoardResult, BoardRow, band_order, row_bands, top_group

SD_WORDS = "sample standard deviation (ddof=1) over seeds"


def seed_group(meta: Mapping[str, Any]) -> str | None:
    """The group a stored prediction set joins as one seed: its detector ("method · feature
    set", as the Detectors page names it) and its re-score batch, for re-scored sets with a
    seed; None otherwise.

    Only re-scored sets are grouped: a released set is a row of the published board, which
    keeps its own line. Sets of two re-score batches of one detector stay apart (their seeds
    may repeat).
    """
    if str(meta.get("origin") or "") != "rescore" or missing(meta.get("seed")):
        return None
    parts = [meta.get(k) for k in ("method", "feature_set", "protocol", "model")]
    detector = " · ".join(str(p) for p in parts if not missing(p))
    fit = fit_slice(meta.get("slice"))
    if fit:
        detector += f" · fit on {fit}"
    return f"{detector}{BATCH_OPEN}{meta.get('source_file') or 'rescore'}]"


def fit_slice(slice_json: Any) -> str:
    """What a re-scored set was fit on beyond its corpus, in words ('backbone=GPT-4.1'); '' for
    the whole corpus under the released labels."""
    import json

    try:
        slice_ = json.loads(slice_json) if isinstance(slice_json, str) and slice_json else {}
    except ValueError:
        return ""
    if not isinstance(slice_, dict):
        return ""
    parts = [f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(slice_.items())
             if k not in ("corpus", "labels") and v not in (None, "", [])]
    if slice_.get("labels") not in (None, "", "released"):
        parts.append(f"labels={slice_['labels']}")
    return " ".join(parts)


BATCH_OPEN = " ["  # a seed group is "detector [batch]"


def seed_of(meta: Mapping[str, Any]) -> int | None:
    seed = meta.get("seed")
    return None if missing(seed) else int(seed)


def _detector(group: str) -> str:
    return group.rpartition(BATCH_OPEN)[0]


@dataclass
class Entry:
    """One line of a board as a reviewer reads it: a row as scored, or a seed group."""

    entrant: str
    role: str
    kind: str
    band: str
    metrics: dict[str, float | None]  # a row's values; a group's means over seeds
    spreads: dict[str, Spread] = field(default_factory=dict)  # a group's, per metric
    seeds: tuple[int, ...] = ()  # a group's seeds (a row's own seed, if it has one)
    members: tuple[str, ...] = ()  # a group's rows (entrant names), in seed order
    items: str = ""  # the items it rests on ('1,051', or '226–244' across seeds)
    contrasts: dict[str, str] = field(default_factory=dict)  # family -> verdict (a group: 'k of n seeds')
    # metric -> [low, high]: a row's own 95% interval; a group's span of its seeds' intervals
    # (board_intervals: the lowest low to the highest high, not an interval of the mean).
    intervals: dict[str, list[float]] = field(default_factory=dict)
    row: str = ""  # a single row's own entrant name, where the line shows a readable one instead

    @property
    def is_group(self) -> bool:
        return bool(self.members)


def entries(result: BoardResult, group: bool = True) -> list[Entry]:
    """The board's lines in band order: one per seed group (at least two seeds), one per other
    row; with ``group`` False, one per row (every seed on its own line)."""
    bands = row_bands(result)
    verdicts: dict[str, dict[str, str]] = {}
    for c in result.contrasts:
        verdicts.setdefault(c.a_name, {})[c.family] = verdict_of(c)
    groups: dict[str, list[BoardRow]] = {}
    for row in result.rows:
        if row.seed_group is not None:
            groups.setdefault(row.seed_group, []).append(row)
    grouped = {g: sorted(rows, key=lambda r: (r.seed if r.seed is not None else -1, r.entrant))
               for g, rows in groups.items() if group and len(rows) > 1}
    # A group is named by its detector; by its batch too when the board has two of that detector.
    batches: dict[str, int] = {}
    for g in grouped:
        batches[_detector(g)] = batches.get(_detector(g), 0) + 1
    out: list[Entry] = []
    seen: set[str] = set()
    for row in result.rows:
        g = row.seed_group
        if g in grouped:
            if g not in seen:
                seen.add(g)
                name = g if batches[_detector(g)] > 1 else _detector(g)
                out.append(_group_entry(name, grouped[g], result.metrics, bands, verdicts))
            continue
        # A re-scored set on a line of its own (one seed, or every seed shown) is named by its
        # detector, features, fit slice and seed, as a group is, not by its set id.
        name = row.entrant if g is None else f"{_detector(g)} · seed {row.seed}"
        out.append(Entry(name, row.role, row.kind, bands[row.entrant], dict(row.metrics),
                         seeds=() if row.seed is None else (int(row.seed),), items=f"{row.n_items:,}",
                         contrasts=dict(verdicts.get(row.entrant, {})), intervals=dict(row.intervals),
                         row=row.entrant))
    metric = result.primary_metric or (result.metrics[0] if result.metrics else None)
    out.sort(key=lambda e: band_order(e.band, e.metrics.get(metric) if metric else None, e.entrant))
    return out


NOT_TESTED = "not tested"


def verdict_of(contrast) -> str:
    """'separates' or 'unresolved'; 'not tested' where the contrast is no test (its p is
    undefined: e.g. a set scoring other runs than the floor cannot be paired with it)."""
    if contrast.p is None or not math.isfinite(contrast.p):
        return NOT_TESTED
    return contrast.verdict or VERDICTS[1]


NOT_CONTRASTED = "—"


def contrasts_text(entry: Entry, families: Sequence[str]) -> str:
    """A line's contrast verdicts in the order of ``families`` (the board's, named once in the
    column's title), so the cell stays short: 'separates · unresolved · separates' for a row,
    '4/5 · 5/5 · 5/5' for a seed group (in how many of its seeds the contrast separates); '—'
    for a family that does not contrast this line, and '' for a line no family contrasts (a
    reference)."""
    if not entry.contrasts:
        return ""
    return " · ".join(entry.contrasts.get(f, NOT_CONTRASTED) for f in families)


def _group_entry(name: str, rows: list[BoardRow], metrics: Sequence[str], bands: dict[str, str],
                 verdicts: dict[str, dict[str, str]]) -> Entry:
    spreads = {m: spread([r.metrics.get(m) for r in rows]) for m in metrics}
    seed_bands = sorted({bands[r.entrant] for r in rows})
    # A band only where every seed has it: seeds in different bands do not order the detector.
    band = seed_bands[0] if len(seed_bands) == 1 else "split: " + ", ".join(
        f"{sum(bands[r.entrant] == b for r in rows)} {b}" for b in seed_bands)
    families: list[str] = []
    for r in rows:
        families.extend(f for f in verdicts.get(r.entrant, {}) if f not in families)
    contrasts = {}
    for fam in families:
        got = [verdicts[r.entrant][fam] for r in rows if fam in verdicts.get(r.entrant, {})]
        tested = [v for v in got if v != NOT_TESTED]
        if not tested:
            contrasts[fam] = NOT_TESTED
        else:
            contrasts[fam] = f"{sum(v == VERDICTS[0] for v in tested)}/{len(tested)}"
    n_items = [r.n_items for r in rows]
    lo, hi = min(n_items), max(n_items)
    intervals = {m: got for m in metrics if (got := interval_span([r.intervals.get(m) for r in rows]))}
    return Entry(name, rows[0].role, rows[0].kind, band,
                 {m: (s.mean if s.n else None) for m, s in spreads.items()}, spreads,
                 tuple(int(r.seed) for r in rows if r.seed is not None), tuple(r.entrant for r in rows),
                 f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}", contrasts, intervals)


# ----------------------------------------------------------------------------- coverage

@dataclass(frozen=True)
class Coverage:
    """An entrant that scores only ``scored`` of the board's ``of`` items (0: left out)."""

    entrant: str
    scored: int
    of: int
    rescored: bool  # a re-scored set (else a released one)

    def sentence(self) -> str:
        if self.scored == 0:
            return f"{self.entrant} scores none of these {self.of:,} runs; left out."
        return f"{self.entrant} scores {self.scored:,} of {self.of:,} runs; its metrics rest on those."


def coverage_line(coverage: Sequence[Coverage], item_kind: str) -> str:
    """One line for every entrant that scores only part of the board's items, e.g.
    '55 re-scored sets score 226–244 of 1,051 failed runs; each rests on its own runs.'"""
    if not coverage:
        return ""
    parts = []
    for rescored in (True, False):
        some = [c for c in coverage if c.rescored == rescored]
        scoring = [c for c in some if c.scored > 0]
        what = "re-scored" if rescored else "released"
        if scoring:
            lo, hi = min(c.scored for c in scoring), max(c.scored for c in scoring)
            n = len(scoring)
            count = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
            parts.append(f"{n} {what} set{'s' if n > 1 else ''} score{'' if n > 1 else 's'} {count} of "
                         f"{scoring[0].of:,} {item_kind}")
        left = len(some) - len(scoring)
        if left:
            parts.append(f"{left} {what} set{'s' if left > 1 else ''} score{'' if left > 1 else 's'} none of them "
                         "and {} left out".format("are" if left > 1 else "is"))
    rest = "; each rests on its own runs" if any(c.scored > 0 for c in coverage) else ""
    return "; ".join(parts) + rest + "."


def top_share(result: BoardResult, entry: Entry) -> str:
    """Whether a board line is in the top group (``board_types.top_group``): 'yes', 'leader', or
    for a seed group in how many of its seeds ('1/2'); '' when it is not, or the board has none."""
    group = top_group(result)
    if group is None:
        return ""
    if entry.is_group:
        n = sum(m in group.members for m in entry.members)
        return f"{n}/{len(entry.members)}" if n else ""
    name = entry.row or entry.entrant
    if name == group.leader:
        return "leader"
    return "yes" if name in group.members else ""


def _leader_entry(lines: list[Entry], leader: str) -> Entry | None:
    """The board line that holds the top group's leader: its own row, or its seed group."""
    return next((e for e in lines if leader in (e.entrant, e.row) or leader in e.members), None)


def leader_name(result: BoardResult, group: bool = True) -> str | None:
    """The top group's leader as the board's lines name it: a seed set by its group's line and
    its seed, not by its set id."""
    found = top_group(result)
    if found is None:
        return None
    line = _leader_entry(entries(result, group=group), found.leader)
    if line is None:
        return found.leader
    seed = next((r.seed for r in result.rows if r.entrant == found.leader), None) if line.is_group else None
    return line.entrant if seed is None else f"{line.entrant}, seed {seed}"


def top_group_names(result: BoardResult, group: bool = True) -> list[str]:
    """The top group's lines as the board shows them (a seed group once, with its share of seeds)."""
    found = top_group(result)
    if found is None:
        return []
    lines = entries(result, group=group)
    out = []
    for e in lines:
        share = top_share(result, e)
        if share:
            out.append(e.entrant + (f" ({share} seeds)" if e.is_group else ""))
    leader = _leader_entry(lines, found.leader)
    leader_line = leader.entrant if leader else None
    return sorted(out, key=lambda n: not (leader_line and n.startswith(leader_line)))
