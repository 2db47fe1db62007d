"""The supervised half of label doubt: out-of-fold probabilities of each step's own label.

A classifier fit on a step's label agrees with that label, right or wrong, so its score says
nothing about it. Fit on the *other* steps, it says what the rest of the corpus makes of a step
like this one: a labeled step whose out-of-fold probability of its own label is low is one the
corpus contradicts. That is confident learning (Northcutt et al., 2021), and cleanlab is its
maintained implementation; here:

- the step features the detectors use (``detectors.features.step_features``, the default
  feature set), one corpus at a time (features of two corpora mean different things);
- a random forest (scikit-learn, :data:`FOREST`: 50 trees on bootstrap halves, leaves of at
  least 5 steps, seed 0), its out-of-fold probabilities from ``cross_val_predict`` over
  :data:`FOLDS` group folds (``GroupKFold``; the groups are the engine's: a room, else a run,
  so a room played under several backbones never sits on both sides of a fold);
- cleanlab's ``get_label_quality_scores`` (self-confidence: the out-of-fold probability of the
  given label; lowest first is cleanlab's default ranking) and ``find_label_issues`` (which
  steps it calls label issues: the confident-learning count of off-diagonal steps, pruned by
  the estimated noise rate).

Why a random forest: on the simulated corpus with 5% of labels flipped (``bench/review_queue.py``)
it put two thirds of the flips in the first 5% of steps at ~2 CPU-s for 14k steps; logistic
regression was cheaper and found 43%, gradient boosting 68% at over ten times the CPU. Each fold's
forest is fit on at most :data:`MAX_FIT` of the other folds' steps (a seeded subsample, as the
engine caps its large fits), so a slice of 100,000 rooms costs five capped fits and one pass of
predictions, not five fits on its million steps; at 1,500 rooms no fold reaches the cap.

Where the half cannot be computed (a corpus with fewer than :data:`FOLDS` room groups, or fewer
than :data:`FOLDS` steps of a class), it is left out for that corpus and a note says why; the
doubt order then rests on the label-free sets alone (``review_queue``).

What it reads is the released labels (``on_release``): the review questions the release.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..view_state.state_fields import filters_any, on_release
from . import Query

FOLDS = 5
MAX_FIT = 50_000  # training steps per fold's fit (a seeded subsample beyond)
FOREST = {"n_estimators": 50, "min_samples_leaf": 5, "max_samples": 0.5, "n_jobs": 1, "random_state": 0}
THREADS = min(FOLDS, os.cpu_count() or 1)  # the folds' forests fitted and scored side by side (_threads)
EXPLAINS = (f"the out-of-fold probability of the step's own label from a random forest on the detectors' step features "
            f"({FOLDS} folds by room; a model fit on the other rooms' labels), ranked by cleanlab (self-confidence, "
            f"lowest first); cleanlab's find_label_issues says which steps are label issues")
COLUMNS = ["corpus", "run_id", "step_idx", "self_confidence", "label_issue"]


@dataclass(frozen=True)
class SupervisedDoubt:
    """Per labeled step of the corpora it could be computed on: ``self_confidence`` (the
    out-of-fold probability of its released label) and ``label_issue`` (cleanlab's verdict).
    ``notes``: one sentence per corpus it was left out on. ``steps`` is a pandas frame, or the
    Parquet file a kept half is in when its reader hands it to a named query."""

    steps: Any
    notes: list[str] = field(default_factory=list)


def supervised_doubt(query: Query, root: str | Path | None, slice_: Mapping[str, Any] | None,
                     chunk_runs: int | None = None, max_fit: int = MAX_FIT) -> SupervisedDoubt:
    """The supervised half on the labeled steps of ``slice_`` (the store at ``root``, which
    ``query`` reads), for each corpus of the slice holding labeled steps. The steps are read
    ``chunk_runs`` runs at a time (``detectors.features.structural_chunks``)."""
    from ..detectors.features import TEXT_CHUNK_RUNS

    frames, notes = [], []
    corpora = query("review_labeled_corpora", {"slice": on_release(slice_)})["corpus"].astype(str).tolist()
    for corpus in corpora:
        found = _one_corpus(query, corpus, on_release(slice_), chunk_runs or TEXT_CHUNK_RUNS, max_fit)
        if isinstance(found, str):
            notes.append(found)
        else:
            frames.append(found[0])
            notes += found[1]
    steps = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return SupervisedDoubt(steps, notes)


class RememberFrame(Protocol):
    """What keeps a table per store version: ``queries.kept.remember_frame`` bound to a store
    root. Handed in: analyses never import the query layer. ``as_file``: a kept table is handed
    back as its Parquet file's path (for a named query to read), not its rows."""

    def __call__(self, name: str, compute: Callable[[], tuple[pd.DataFrame, Any]],
                 as_file: bool = False) -> tuple[Any, Any, bool]: ...
KEPT_NAME = "label_doubt/supervised"


def kept_supervised_doubt(query: Query, root: str | Path | None, slice_: Mapping[str, Any] | None,
                          remember: RememberFrame) -> SupervisedDoubt:
    """:func:`supervised_doubt`, kept per store version for the view every reader first opens
    (no filter: the whole store; the label choice does not matter, the half reads the released
    labels). Its fit is seconds at 1,500 rooms and about 30 s at 100,000: paid by a write (or
    the first open after it), not by every new server's first /review. A slice is computed."""
    if filters_any(slice_):
        return supervised_doubt(query, root, slice_)

    def compute() -> tuple[pd.DataFrame, list[str]]:
        half = supervised_doubt(query, root, slice_)
        return half.steps, half.notes

    steps, notes, _ = remember(KEPT_NAME, compute)
    return SupervisedDoubt(steps, list(notes))


def _one_corpus(query: Query, corpus: str, slice_: Mapping[str, Any], chunk_runs: int,
                max_fit: int) -> tuple[pd.DataFrame, list[str]] | str:
    """The half on one corpus in three reads of its steps, a chunk of runs at a time, so that
    what is held is the labels, the fits' sampled rows and one chunk (at a million rooms the
    whole matrix alone would be a gigabyte): the labels and the folds; the rows each fold's fit
    reads; every labeled step scored by the forest of the folds it was not in. The same
    forests and probabilities as scikit-learn's ``cross_val_predict`` of the capped forest over
    group folds on the whole matrix (the tests' reference, tests/doubt_reference.py)."""
    from sklearn.model_selection import GroupKFold

    from ..detectors.features import structural_chunks
    from ..detectors.registry import seeded_subsample
    from ..detectors.splits import run_groups

    runs, run_pos, step_idx, label = None, [], [], []
    for chunk in structural_chunks(query, corpus, slice_, chunk_runs):
        runs = chunk.runs
        keep = chunk.labeled
        run_pos.append(chunk.run_pos[keep])
        step_idx.append(chunk.step_idx[keep].astype(np.int32))
        label.append(chunk.label[keep].astype(np.int8))
        del chunk  # the chunk's matrix: only its keys and labels are kept
    if runs is None:
        return f"The supervised half of label doubt is left out on corpus '{corpus}': it has no steps."
    run_pos, step_idx, y = np.concatenate(run_pos), np.concatenate(step_idx), np.concatenate(label).astype(int)
    # Group codes in the order of the group keys themselves: GroupKFold then folds exactly as on the keys.
    groups = np.unique(run_groups(runs)[0], return_inverse=True)[1].ravel()[run_pos]
    run_ids = runs["run_id"].to_numpy(dtype=object)
    # Every run's slice columns, a few hundred MB at a million rooms: the later reads need only
    # the runs' positions.
    positions = runs.loc[:, ["run_pos"]]
    del runs
    n_groups, smallest = len(np.unique(groups)), int(min((y == 0).sum(), (y == 1).sum()))
    why = _too_small(n_groups, smallest)
    if why:
        return f"The supervised half of label doubt is left out on corpus '{corpus}': {why}."
    fold = np.empty(len(y), dtype=np.int8)
    for k, (_, test) in enumerate(GroupKFold(n_splits=FOLDS).split(np.zeros((len(y), 1), np.int8), y, groups)):
        fold[test] = k
    # Each fold's fit rows: its training steps, at most max_fit of them (a seeded subsample).
    fit_rows = []
    for k in range(FOLDS):
        train = np.flatnonzero(fold != k)
        fit_rows.append(train[seeded_subsample(np.arange(len(train)), max_fit, seed=0)])
    wanted = np.unique(np.concatenate(fit_rows))
    fit_X = _rows_of(query, corpus, slice_, chunk_runs, wanted, positions)
    with _threads() as pool:
        forests = list(pool.map(lambda rows: _forest().fit(fit_X[np.searchsorted(wanted, rows)], y[rows]), fit_rows))
        probabilities = _score_every_step(query, corpus, slice_, chunk_runs, fold, forests, positions, pool)
    confidence, issue = rank_by_cleanlab(y, probabilities)
    del probabilities
    # Run id and corpus as categories (codes into the runs' ids): at a million rooms a string per
    # step was 9 million strings in the frame and as many again when it is kept as Parquet.
    frame = pd.DataFrame({"corpus": pd.Categorical.from_codes(np.zeros(len(y), dtype=np.int8), [corpus]),
                          "run_id": pd.Categorical.from_codes(run_pos, run_ids),
                          "step_idx": step_idx.astype(np.int64), "self_confidence": confidence, "label_issue": issue})
    largest = max(len(y) - int((fold == k).sum()) for k in range(FOLDS))
    notes = [] if largest <= max_fit else [
        f"Label doubt on corpus '{corpus}': each fold's forest was fit on a seeded sample of {max_fit:,} of its up to "
        f"{largest:,} training steps (five fits on every step would take many minutes); every one of the "
        f"{len(y):,} labeled steps is scored."]
    return frame, notes


def _threads():
    """Threads for the folds' forests: each forest fits and predicts on one thread (n_jobs=1,
    so its trees add up in one order and the probabilities are the same bit for bit), and the
    folds' forests run side by side; trees grow and predict without the GIL."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="label-doubt")


def _forest():
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(**FOREST)


def _labeled_chunks(query: Query, corpus: str, slice_: Mapping[str, Any], chunk_runs: int, runs: pd.DataFrame):
    """(first labeled row of the chunk, the chunk's labeled rows of X), chunk by chunk."""
    from ..detectors.features import structural_chunks

    start = 0
    for chunk in structural_chunks(query, corpus, slice_, chunk_runs, runs=runs):
        X = chunk.X[chunk.labeled]
        yield start, X
        start += len(X)


def _rows_of(query: Query, corpus: str, slice_: Mapping[str, Any], chunk_runs: int, rows: np.ndarray,
             runs: pd.DataFrame) -> np.ndarray:
    """The labeled rows ``rows`` (sorted) of the corpus's matrix, read a chunk at a time."""
    out = None
    for start, X in _labeled_chunks(query, corpus, slice_, chunk_runs, runs):
        if out is None:
            out = np.empty((len(rows), X.shape[1]), dtype=X.dtype)
        lo, hi = np.searchsorted(rows, [start, start + len(X)])
        out[lo:hi] = X[rows[lo:hi] - start]
    return out


def _score_every_step(query: Query, corpus: str, slice_: Mapping[str, Any], chunk_runs: int, fold: np.ndarray,
                      forests: list, runs: pd.DataFrame, pool) -> np.ndarray:
    """Each labeled step's class probabilities (columns 0, 1) from the forest of its fold (the
    folds' forests on ``pool``'s threads, each writing its own rows)."""
    probabilities = np.zeros((len(fold), 2))

    def predict(k: int, rows: np.ndarray, X: np.ndarray) -> None:
        forest = forests[k]
        columns = np.searchsorted([0, 1], forest.classes_)
        probabilities[rows[:, None], columns[None, :]] = forest.predict_proba(X)

    for start, X in _labeled_chunks(query, corpus, slice_, chunk_runs, runs):
        of = fold[start:start + len(X)]
        inside = [np.flatnonzero(of == k) for k in range(len(forests))]
        done = [pool.submit(predict, k, start + rows, X[rows]) for k, rows in enumerate(inside) if len(rows)]
        for future in done:
            future.result()
    return probabilities


def _too_small(n_groups: int, smallest_class: int) -> str | None:
    if n_groups < FOLDS:
        return f"its labeled steps are in {n_groups} room group(s), and {FOLDS} folds need {FOLDS}"
    if smallest_class < FOLDS:
        return f"one class has {smallest_class} labeled step(s), and {FOLDS} folds need {FOLDS} of each"
    return None


def rank_by_cleanlab(y: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cleanlab's self-confidence of each given label, and whether it calls the label an issue."""
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    confidence = get_label_quality_scores(y, probabilities, method="self_confidence")
    # One process: cleanlab's worker pool reads module globals its parent set, which a process
    # started by "spawn" (each part of a large build is one) does not share.
    issue = find_label_issues(y, probabilities, n_jobs=1)
    return np.asarray(confidence, dtype=float), np.asarray(issue, dtype=bool)
