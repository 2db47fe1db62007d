"""POST detection and LIVE boards: can a run's failure be told from its trace (or a prefix)?

Each board declares its entrants in board order (``POST_BOARD.entrants``, ``LIVE_BOARD.entrants``
below); scoring lives in ``auditatlas.analyses.run_detection`` (feature groups, 5x5 CV, ECOD,
and run-level aggregates of step prediction sets). This module turns them into boards: ROC-AUC
rows, the random floor, the item count, and paired DeLong contrasts in declared contrast
families, whose members are chosen by role and kind.
"""
from __future__ import annotations

import numpy as np

from ..errors import UndefinedMetric
from ..stats import Contrast, delong_paired, roc_auc
from . import Query
from . import board_intervals as ci
from . import run_detection as detection
from .board_seeds import seed_group, seed_of
from .board_types import LEADER, Board, BoardResult, BoardRow, ContrastFamily, Task, contrasts_for
from .entrant import Entrant
from .run_detection import RunScorer

PREFIXES = detection.LIVE_FRACTIONS
LIVE_MIN_STEPS = 4  # the published LIVE population: runs of at least 4 steps


def _distinct_notes(n: int) -> list[str]:
    """Says how the supervised entrants were fitted when the population is large (only then)."""
    if n <= detection.DISTINCT_ABOVE:
        return []
    return [f"Every one of the {n:,} runs is scored. Above {detection.DISTINCT_ABOVE:,} runs each fold of a supervised "
            "entrant is fitted on the distinct feature rows of its training runs, each weighted by the runs it "
            "stands for: the same fit as on every run, in seconds rather than minutes."]


def _delong(fam: ContrastFamily, a: BoardRow, b: BoardRow) -> Contrast:
    """Paired DeLong on the runs both rows score (a re-scored set scores its test runs only;
    both rows' items are in run id order). Not a test where those runs hold one outcome."""
    ids_a, ids_b = a.items["run_ids"], b.items["run_ids"]
    if np.array_equal(ids_a, ids_b):
        y, sa, sb, how = a.items["y"], a.items["score"], b.items["score"], "paired DeLong"
    else:
        _, ia, ib = np.intersect1d(ids_a, ids_b, assume_unique=True, return_indices=True)
        y, sa, sb = a.items["y"][ia], a.items["score"][ia], b.items["score"][ib]
        how = f"paired DeLong on the {len(ia):,} runs both score"
    try:
        res = delong_paired(y, sa, sb)
    except UndefinedMetric as exc:
        return Contrast(fam.name, a.entrant, b.entrant, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan,
                        f"not paired: {exc}")
    return Contrast(fam.name, a.entrant, b.entrant, res.auc_a, res.auc_b, res.diff, res.ci95[0], res.ci95[1], res.p,
                    how)


TESTS = {"delong": _delong}


def _row(entrant: Entrant, scores: detection.RunScores, metrics: dict) -> BoardRow:
    order = np.argsort(scores.run_ids)
    items = {"run_ids": scores.run_ids[order], "y": scores.y[order], "score": scores.scores[order]}
    return BoardRow(entrant.name, metrics, items, n_items=len(scores.y), role=entrant.role, kind=entrant.kind)


def _entrant(board: Board, name: str) -> Entrant:
    """The board's declared entrant called ``name``; any other name is a stored prediction set."""
    return board.entrant(name) or detection.set_entrant(name)


def _auc_interval(scores: detection.RunScores) -> dict[str, list[float]]:
    """{"roc_auc": DeLong's 95% interval}, or {} where it is undefined."""
    got = ci.auc_interval(scores.y, scores.scores)
    return {"roc_auc": got} if got else {}


def _cell_auc(scores: detection.RunScores) -> float | None:
    """The entrant's ROC-AUC (``stats.roc_auc``), or None, a blank cell, where it is undefined."""
    try:
        return roc_auc(scores.y, scores.scores)
    except UndefinedMetric:
        return None


POST_CONTRAST_FAMILIES = (
    ContrastFamily("ROC-AUC vs random", "roc_auc", "delong", against="floor", members=("baseline", "entrant", "extra"),
                   short="vs random"),
    ContrastFamily("structure beyond size", "roc_auc", "delong", against="baseline", members=("entrant",),
                   kinds=("structure",), short="beyond size"),
    # Who wins: every contender against the best ROC-AUC among them.
    ContrastFamily("ROC-AUC vs the leader", "roc_auc", "delong", against=LEADER, members=("baseline", "entrant", "extra"),
                   short="vs leader"),
)


def _seeds(query: Query, corpus: str, rows: list[BoardRow]) -> None:
    """Mark the rows of stored re-scored sets with their seed group (``board_seeds``)."""
    stored = [r for r in rows if r.kind == "prediction set"]
    if not stored:
        return
    meta = {m["set_id"]: m for m in query("prediction_sets", {"corpus": corpus, "granularity": None})
            .to_dict(orient="records")}
    for row in stored:
        # A set named like a declared entrant is on the board as "<set_id> (prediction set)".
        m = meta.get(row.entrant) or meta.get(row.entrant.removesuffix(" (prediction set)"))
        if m is not None:
            row.seed_group, row.seed = seed_group(m), seed_of(m)


def compute_post(query: Query, corpus: str, slice_: dict | None = None) -> BoardResult:
    entrants = detection.detection_entrants(query, corpus, slice_, 1.0, 1, entrants=POST_BOARD.entrants)
    rows = [_row(_entrant(POST_BOARD, name), e, {"roc_auc": _cell_auc(e)}) for name, e in entrants.items()]
    for row, e in zip(rows, entrants.values()):
        row.intervals = _auc_interval(e)
    _seeds(query, corpus, rows)
    first = next(iter(entrants.values()))
    notes = [f"{len(first.y)} runs ({int(first.y.sum())} failed); supervised entrants: 5-fold stratified CV averaged over 5 seeds."]
    notes += _distinct_notes(len(first.y))
    contrasts = contrasts_for(rows, POST_CONTRAST_FAMILIES, TESTS)
    return BoardResult("post-detection", "POST detection (run-level ROC-AUC)", "POST", corpus, ("roc_auc",), POST_BOARD.floor,
                       len(first.y), "runs with an outcome", rows, contrasts, notes,
                       primary_metric="roc_auc", primary_contrast_family=POST_CONTRAST_FAMILIES[0].name,
                       leader_family=POST_CONTRAST_FAMILIES[-1].name,
                       family_labels={f.name: f.label for f in POST_CONTRAST_FAMILIES},
                       interval_methods={"roc_auc": ci.DELONG})


def _prefix_key(fraction: float) -> str:
    return f"auc@{round(fraction * 100)}"


LIVE_METRICS = tuple(_prefix_key(f) for f in PREFIXES) + ("t2d",)
LIVE_CONTRAST_FAMILIES = (
    ContrastFamily("earliest prefix (25%) vs size (flat)", "auc@25", "delong", against="baseline",
                   members=("entrant", "extra"), short="25% vs size"),
    ContrastFamily("25% vs the leader", "auc@25", "delong", against=LEADER, members=("baseline", "entrant", "extra"),
                   short="vs leader"),
)


def compute_live(query: Query, corpus: str, slice_: dict | None = None) -> BoardResult:
    # Each prefix's ROC-AUCs and intervals are read as soon as it is scored, and only the first
    # prefix's scores are kept (the rows' items, which the contrasts at 25% read): a million runs'
    # scores at every prefix were about a gigabyte held to the end.
    first: dict[str, detection.RunScores] = {}
    aucs: dict[str, dict[float, float | None]] = {}
    intervals: dict[str, dict[str, list[float]]] = {}
    for f in PREFIXES:
        scored = detection.detection_entrants(query, corpus, slice_, f, LIVE_MIN_STEPS, entrants=LIVE_BOARD.entrants,
                                              prediction_sets=False)
        first = first or scored
        for name, scores in scored.items():
            aucs.setdefault(name, {})[f] = _cell_auc(scores)
            got = _auc_interval(scores)
            if got:
                intervals.setdefault(name, {})[_prefix_key(f)] = got["roc_auc"]
        del scored
    rows = []
    for name in first:
        by_prefix = {f: aucs[name].get(f) for f in PREFIXES}
        t2d = detection.time_to_detection(by_prefix)
        metrics = {_prefix_key(f): by_prefix[f] for f in PREFIXES}
        metrics["t2d"] = None if t2d is None else float(round(t2d * 100))
        row = _row(_entrant(LIVE_BOARD, name), first[name], metrics)
        # Each prefix's ROC-AUC rests on that prefix's scores (t2d is a threshold crossing: no interval).
        row.intervals.update(intervals.get(name, {}))
        rows.append(row)
    # Contrasts at the earliest prefix: the early-warning question.
    contrasts = contrasts_for(rows, LIVE_CONTRAST_FAMILIES, TESTS)
    floor = first[LIVE_BOARD.floor]
    notes = [f"{len(floor.y)} runs of at least {LIVE_MIN_STEPS} steps ({int(floor.y.sum())} failed); prefixes "
             f"{', '.join(f'{f:.0%}' for f in PREFIXES)} of each run's steps; t2d = earliest prefix with ROC-AUC >= 0.70 "
             "(blank: never).",
             "A prefix is a fraction of the finished run (the published protocol), so its length still reveals the "
             "final length: size entrants can score early for that reason alone."]
    notes += _distinct_notes(len(floor.y))
    return BoardResult("live", "LIVE streaming early warning (ROC-AUC by prefix)", "LIVE", corpus, LIVE_METRICS, LIVE_BOARD.floor,
                       len(floor.y), "runs", rows, contrasts, notes,
                       primary_metric="auc@25", primary_contrast_family=LIVE_CONTRAST_FAMILIES[0].name,
                       leader_family=LIVE_CONTRAST_FAMILIES[-1].name,
                       family_labels={f.name: f.label for f in LIVE_CONTRAST_FAMILIES},
                       interval_methods={**{_prefix_key(f): ci.DELONG for f in PREFIXES},
                                         "t2d": "none (the first prefix crossing 0.70, not an estimate with an interval)"})


BOTH_OUTCOMES = "runs with an outcome, both failed and succeeded ones"


def corpora(query: Query) -> list[str]:
    return query("detection_corpora")["corpus"].tolist()


# The entrants, in the published boards' order; each names its role, kind and the registry
# detector and run features that score it. Adding an entrant is one line in its board's tuple.
RANDOM = Entrant("random", "floor", "random", RunScorer("random", "size"))
SIZE = Entrant("size (flat)", "baseline", "size", RunScorer("logreg", "size"))
# Supervised entrants that read the dependency structure: "structure beyond size" contrasts them.
SIZE_DEPS = Entrant("auditable (size+deps)", "entrant", "structure", RunScorer("logreg", "size+deps"))
FULL = Entrant("full", "entrant", "structure", RunScorer("logreg", "full"))

POST_BOARD = Board("post-detection", "POST detection", Task("POST", "run", None), ("roc_auc",), "runs with an outcome",
                   compute_post, corpora, needs=BOTH_OUTCOMES, entrants=(
                       RANDOM,
                       SIZE,
                       Entrant("pyod-flatten (ECOD)", "entrant", "outlier detector", RunScorer("ecod", "size")),
                       SIZE_DEPS,
                       FULL,
                   ))
LIVE_BOARD = Board("live", "LIVE streaming", Task("LIVE", "run", None), LIVE_METRICS, "runs", compute_live, corpora,
                   needs=BOTH_OUTCOMES, entrants=(
                       RANDOM,
                       SIZE,
                       SIZE_DEPS,
                       FULL,
                       Entrant("pyod (ECOD)", "entrant", "outlier detector", RunScorer("ecod", "size")),
                       Entrant("dep-span (online)", "entrant", "online score", RunScorer("dep-span", ("mean_span",))),
                   ))
