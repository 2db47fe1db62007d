"""POST localization: given a failed run, which step is the mistake? Top-1, Top-3, MRR.

Items are failed runs with a known truth step (Who&When: the human decisive step; MAADBench
format: the origin of the failing chain; see queries/sql/localization_items.sql). Entrants:

- ``random``, computed exactly as the published board does (specs/catchbench.md): runs in
  plain-string order of their file paths, their steps pooled in that order, one
  ``numpy.random.RandomState(seed).rand(n)`` draw per seed 0..4, averaged over seeds;
- ``position``: earliest step first;
- every step-level prediction set of the corpus in the store (released judges, imported
  detector outputs, re-scored sets), ranked by the ``predictions`` view.
"""
from __future__ import annotations

import json

import numpy as np

from ..errors import AtlasError
from ..stats import Contrast, mcnemar_exact, paired_mean_bootstrap, shared_resamples, wilcoxon_paired
from . import Query
from . import board_intervals as ci
from .board_seeds import Coverage, seed_group, seed_of
from .board_types import LEADER, Board, BoardResult, BoardRow, ContrastFamily, Task, contrasts_for
from .entrant import Entrant

METRICS = ("top1", "top3", "mrr")
RANDOM_SEEDS = range(5)
# Protocols whose judge returns one step, not a ranking: only a hit on that step counts, so
# Top-1 = Top-3 = MRR = hit rate (specs/catchbench.md); a miss or an abstention ranks nowhere.
SINGLE_PICK_PROTOCOLS = frozenset({"step_by_step", "binary_search"})


def _metrics_from_ranks(ranks: np.ndarray) -> dict[str, float]:
    return {
        "top1": float(np.mean(ranks == 1)),
        "top3": float(np.mean(ranks <= 3)),
        "mrr": float(np.mean(1.0 / ranks)),
    }


def _items_from_ranks(ranks: np.ndarray) -> dict[str, np.ndarray]:
    return {"hit1": (ranks == 1).astype(float), "hit3": (ranks <= 3).astype(float), "rr": 1.0 / ranks}


def random_ranks(n_steps: np.ndarray, truth: np.ndarray, seed: int) -> np.ndarray:
    """Rank of each run's truth step under one pooled uniform draw (the published procedure)."""
    n_steps = np.asarray(n_steps, dtype=np.int64)
    draw = np.random.RandomState(seed).rand(int(n_steps.sum()))
    # rank = 1 + number of the run's steps scored strictly higher (a continuous draw has no
    # ties), counted for every run at once: a loop over the runs took 13 s at a million rooms.
    run_of_step = np.repeat(np.arange(len(n_steps)), n_steps)
    first = np.concatenate(([0], np.cumsum(n_steps)[:-1])).astype(np.int64)
    at_truth = draw[first + np.asarray(truth, dtype=np.int64)]
    higher = draw > at_truth[run_of_step]
    return 1.0 + np.bincount(run_of_step, weights=higher, minlength=len(n_steps))


# A computed entrant's scorer: the runs' lengths and truth steps -> its metrics, per-run values
# (None: no per-run values, so no contrast) and its note.
def random_scores(n_steps: np.ndarray, truth: np.ndarray) -> tuple[dict, dict | None, str]:
    per_seed = [random_ranks(n_steps, truth, s) for s in RANDOM_SEEDS]
    metrics = {m: float(np.mean([_metrics_from_ranks(r)[m] for r in per_seed])) for m in METRICS}
    items = {k: np.mean([_items_from_ranks(r)[k] for r in per_seed], axis=0) for k in ("hit1", "hit3", "rr")}
    return metrics, items, "published procedure: pooled RandomState(seed).rand draws, seeds 0-4, averaged"


def expectation_scores(n_steps: np.ndarray, truth: np.ndarray) -> tuple[dict, dict | None, str]:
    """The analytic expectation of a uniform random ranking (an extra row, not the floor)."""
    n = n_steps.astype(float)
    harmonic = np.array([np.sum(1.0 / np.arange(1, k + 1)) for k in n_steps])
    metrics = {"top1": float(np.mean(1 / n)), "top3": float(np.mean(np.minimum(3, n) / n)), "mrr": float(np.mean(harmonic / n))}
    return metrics, None, ""


def position_scores(n_steps: np.ndarray, truth: np.ndarray) -> tuple[dict, dict | None, str]:
    ranks = truth.astype(float) + 1
    return _metrics_from_ranks(ranks), _items_from_ranks(ranks), "earliest step first"


def computed_row(entrant: Entrant, n_steps: np.ndarray, truth: np.ndarray) -> BoardRow:
    """A declared entrant's row, scored by its scorer on every failed run."""
    metrics, items, note = entrant.scorer(n_steps, truth)
    return BoardRow(entrant.name, metrics, items or {}, n_items=len(truth), role=entrant.role, kind=entrant.kind,
                    note=note)


def entrant_name(row: dict) -> str:
    """Board spelling of a prediction set: 'llm-judge all-at-once (gpt-5.5)' for judges; a set
    whose provenance names its ``variant`` (a judge run here: its template, with or without the
    truth) adds it, so two judges of one model and protocol are two rows."""
    if row.get("method") == "llm_judge" and row.get("protocol") and row.get("model"):
        name = f"llm-judge {row['protocol'].replace('_', '-')} ({row['model']})"
        variant = _params(row).get("variant")
        return name + (" [addendum]" if _is_addendum(row) else "") + (f" [{variant}]" if variant else "")
    return str(row["set_id"])


def set_entrant(row: dict) -> Entrant:
    """A stored step-level prediction set: a judge or another set; an addendum is an extra row."""
    kind = "judge" if row.get("method") == "llm_judge" else "prediction set"
    return Entrant(entrant_name(row), "extra" if _is_addendum(row) else "entrant", kind)


def _params(row: dict) -> dict:
    try:
        params = json.loads(row.get("params") or "{}")
    except (TypeError, json.JSONDecodeError):
        params = {}
    return params if isinstance(params, dict) else {}


def _is_addendum(row: dict) -> bool:
    return "addendum" in str(row.get("set_id", "")) or _params(row).get("board") == "addendum"


def abstention_note(meta: dict, run_ids: list[str]) -> tuple[str, int]:
    """'abstained on k of n runs (x%)' for a set whose provenance lists the runs it abstained on
    (``params.abstained_runs``: an unreadable, empty or refused reply, auditatlas/judges), over
    the board's items; those runs are neither hits nor misses, so the row's metrics are over the
    runs it answered, and the note says how many it did not."""
    abstained = _params(meta).get("abstained_runs")
    if not isinstance(abstained, list):
        return "", 0
    items = set(run_ids)
    k = sum(1 for r in abstained if r in items)
    return f"abstained on {k} of {len(items)} runs ({k / max(len(items), 1):.1%}): not scored", k


def prediction_set_entrants(query: Query, corpus: str, run_ids: list[str],
                            truth: np.ndarray) -> tuple[list[BoardRow], list[Coverage]]:
    """One row per step-level prediction set of the corpus, and the coverage of every set that
    scores only part of the items (a set scoring none of them is left out)."""
    sets = query("prediction_sets", {"corpus": corpus, "granularity": "step"})
    if sets.empty:
        return [], []
    ranks = query("localization_ranks", {"corpus": corpus, "items": run_ids, "truths": [int(t) for t in truth]})
    index = {rid: i for i, rid in enumerate(run_ids)}
    by_set = {set_id: got for set_id, got in ranks.groupby("set_id", sort=False)}
    rows, coverage = [], []
    for meta in sets.to_dict(orient="records"):
        got = by_set.get(meta["set_id"])
        rescored = seed_group(meta) is not None or meta.get("origin") == "rescore"
        if got is None or got.empty:
            label = f"prediction set '{meta['set_id']}'"
            note, k = abstention_note(meta, run_ids)
            coverage.append(Coverage(f"{label} ({note})" if k else label, 0, len(run_ids), rescored))
            continue
        full = np.full(len(run_ids), np.nan)
        got_ranks = got["rank"].to_numpy(dtype=float)
        if meta.get("protocol") in SINGLE_PICK_PROTOCOLS:
            picked = (got_ranks == 1) & (got["score"].to_numpy(dtype=float) > 0)
            got_ranks = np.where(picked, 1.0, np.inf)
        full[[index[r] for r in got["run_id"]]] = got_ranks
        covered = ~np.isnan(full)
        r = full[covered]
        entrant = set_entrant(meta)
        items = {k: np.where(covered, v, np.nan) for k, v in _items_from_ranks(np.nan_to_num(full, nan=1e9)).items()}
        note, _ = abstention_note(meta, run_ids)
        rows.append(BoardRow(entrant.name, _metrics_from_ranks(r), items, n_items=int(covered.sum()),
                             coverage=float(covered.mean()), role=entrant.role, kind=entrant.kind, note=note,
                             seed_group=seed_group(meta), seed=seed_of(meta)))
        if not covered.all():
            coverage.append(Coverage(entrant_name(meta), int(covered.sum()), len(run_ids), rescored))
    return rows, coverage


def _paired(a: BoardRow, b: BoardRow, key: str) -> tuple[np.ndarray, np.ndarray]:
    both = ~np.isnan(a.items[key]) & ~np.isnan(b.items[key])
    return a.items[key][both], b.items[key][both]


def _mcnemar(fam: ContrastFamily, a: BoardRow, b: BoardRow) -> Contrast:
    key = "hit1" if fam.metric == "top1" else "hit3"
    xa, xb = _paired(a, b, key)
    res = mcnemar_exact(xa.astype(bool), xb.astype(bool))
    boot = paired_mean_bootstrap(xa, xb, n_boot=2000, seed=0)
    return Contrast(fam.name, a.entrant, b.entrant, float(xa.mean()), float(xb.mean()), float(xa.mean() - xb.mean()),
                    boot.ci95[0], boot.ci95[1], res.p, "exact McNemar (CI: paired bootstrap)")


def _wilcoxon(fam: ContrastFamily, a: BoardRow, b: BoardRow) -> Contrast:
    xa, xb = _paired(a, b, "rr")
    res = wilcoxon_paired(xa, xb)
    boot = paired_mean_bootstrap(xa, xb, n_boot=2000, seed=0)
    return Contrast(fam.name, a.entrant, b.entrant, float(xa.mean()), float(xb.mean()), float(xa.mean() - xb.mean()),
                    boot.ci95[0], boot.ci95[1], res.p, "Wilcoxon signed-rank (CI: paired bootstrap)")


# Every stored set (addenda included) against the position baseline; the analytic expectation
# has no per-run values, so no family contrasts it.
CONTRAST_FAMILIES = (
    ContrastFamily("Top-1 vs position", "top1", "mcnemar", against="baseline", members=("entrant", "extra"), short="Top-1"),
    ContrastFamily("Top-3 vs position", "top3", "mcnemar", against="baseline", members=("entrant", "extra"), short="Top-3"),
    ContrastFamily("MRR vs position", "mrr", "wilcoxon", against="baseline", members=("entrant", "extra"), short="MRR"),
    # Who wins: every contender against the best Top-1 among them.
    ContrastFamily("Top-1 vs the leader", "top1", "mcnemar", against=LEADER, members=("baseline", "entrant", "extra"),
                   short="vs leader"),
)
TESTS = {"mcnemar": _mcnemar, "wilcoxon": _wilcoxon}


INTERVAL_METHODS = {"top1": ci.CLOPPER_PEARSON_RUNS, "top3": ci.CLOPPER_PEARSON_RUNS, "mrr": ci.BOOTSTRAP_RUNS}


def row_intervals(row: BoardRow) -> dict[str, list[float]]:
    """Top-1 and Top-3 as shares of the runs the row scores, MRR as their mean reciprocal rank
    (``board_intervals``); none for the analytic expectation, which has no per-run values."""
    if not row.items:
        return {}
    got = {"top1": ci.share_interval(row.items["hit1"]), "top3": ci.share_interval(row.items["hit3"]),
           "mrr": ci.mean_interval(row.items["rr"])}
    return {m: v for m, v in got.items() if v is not None}


def compute(query: Query, corpus: str, slice_: dict | None = None) -> BoardResult:
    items = query("localization_items", {"target_corpus": corpus, "slice": slice_ or {}})
    if items.empty:
        raise AtlasError(f"POST localization on '{corpus}': no failed run with a labeled anomalous step in this slice.")
    n_steps = items["n_steps"].to_numpy(dtype=int)
    truth = items["truth_idx"].to_numpy(dtype=int)
    # The declared entrants, the stored step-level sets, then the declared extra rows.
    rows = [computed_row(e, n_steps, truth) for e in BOARD.entrants if e.role != "extra"]
    set_rows, coverage = prediction_set_entrants(query, corpus, items["run_id"].tolist(), truth)
    rows += set_rows
    rows += [computed_row(e, n_steps, truth) for e in BOARD.entrants if e.role == "extra"]
    # A judge's abstentions, stated where the board's notes are read (the row keeps its own).
    notes = [f"{row.entrant}: {row.note}" for row in set_rows if row.note.startswith("abstained")]
    # The rows' intervals and contrasts bootstrap their per-run values over the same runs with
    # one seed: their resamples' means are taken together, the draws made once.
    with shared_resamples([v[np.isfinite(v)] for row in rows for v in row.items.values()]):
        for row in rows:
            row.intervals = row_intervals(row)
        contrasts = contrasts_for(rows, CONTRAST_FAMILIES, TESTS)
    return BoardResult("post-localization", "POST localization (Top-1 / Top-3 / MRR)", "POST", corpus, METRICS,
                       BOARD.floor, len(items), "failed runs", rows, contrasts, notes=notes, coverage=coverage,
                       family_labels={f.name: f.label for f in CONTRAST_FAMILIES},
                       primary_metric="top1", primary_contrast_family=CONTRAST_FAMILIES[0].name,
                       leader_family=CONTRAST_FAMILIES[-1].name,
                       interval_methods=INTERVAL_METHODS)


def corpora(query: Query) -> list[str]:
    frame = query("localization_corpora")
    return frame["corpus"].tolist()


# The entrants this board computes itself, in board order; the stored step-level sets (the
# released judges, re-scored detectors) come after the non-extra ones.
BOARD = Board("post-localization", "POST localization", Task("POST", "step", None), METRICS, "failed runs", compute,
              corpora, needs="a failed run with a labeled anomalous step", entrants=(
                  Entrant("random", "floor", "random", random_scores),
                  Entrant("position", "baseline", "position", position_scores),
                  Entrant("random (analytic expectation)", "extra", "expectation", expectation_scores),
              ))
