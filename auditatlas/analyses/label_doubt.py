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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..view_state.state_fields import filters_any, on_release
from . import Query

FOLDS = 5
MAX_FIT = 50_000  # training steps per fold's fit (a seeded subsample beyond)
FOREST = {"n_estimators": 50, "min_samples_leaf": 5, "max_samples": 0.5, "n_jobs": 1, "random_state": 0}
EXPLAINS = (f"the out-of-fold probability of the step's own label from a random forest on the detectors' step features "
            f"({FOLDS} folds by room; a model fit on the other rooms' labels), ranked by cleanlab (self-confidence, "
            f"lowest first); cleanlab's find_label_issues says which steps are label issues")
COLUMNS = ["corpus", "run_id", "step_idx", "self_confidence", "label_issue"]


@dataclass(frozen=True)
class SupervisedDoubt:
    """Per labeled step of the corpora it could be computed on: ``self_confidence`` (the
    out-of-fold probability of its released label) and ``label_issue`` (cleanlab's verdict).
    ``notes``: one sentence per corpus it was left out on."""

    steps: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def supervised_doubt(query: Query, root: str | Path | None, slice_: Mapping[str, Any] | None) -> SupervisedDoubt:
    """The supervised half on the labeled steps of ``slice_`` (the store at ``root``, which
    ``query`` reads), for each corpus of the slice holding labeled steps."""
    from ..detectors.features import step_features

    frames, notes = [], []
    corpora = query("review_labeled_corpora", {"slice": on_release(slice_)})["corpus"].astype(str).tolist()
    for corpus in corpora:
        features = step_features(query, corpus, on_release(slice_))
        found = _one_corpus(features)
        if isinstance(found, str):
            notes.append(found)
        else:
            frames.append(found)
    steps = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return SupervisedDoubt(steps, notes)


# What keeps a table per store version: ``queries.kept.remember_frame`` bound to a store root,
# (name, compute -> (frame, notes)) -> (frame, notes, read). Handed in: analyses never import
# the query layer.
RememberFrame = Callable[[str, Callable[[], tuple[pd.DataFrame, Any]]], tuple[pd.DataFrame, Any, bool]]
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


def _one_corpus(features) -> pd.DataFrame | str:
    from ..detectors.splits import run_groups

    labeled = features.labeled
    y = features.label[labeled].astype(int)
    groups = run_groups(features.runs)[0][features.run_pos][labeled]
    n_groups, smallest = len(set(groups)), int(min((y == 0).sum(), (y == 1).sum()))
    why = _too_small(n_groups, smallest)
    if why:
        return f"The supervised half of label doubt is left out on corpus '{features.corpus}': {why}."
    probabilities = out_of_fold(features.X[labeled], y, groups)
    confidence, issue = rank_by_cleanlab(y, probabilities)
    return pd.DataFrame({"corpus": features.corpus, "run_id": features.run_ids()[features.run_pos][labeled],
                         "step_idx": features.step_idx[labeled], "self_confidence": confidence,
                         "label_issue": issue})


def _too_small(n_groups: int, smallest_class: int) -> str | None:
    if n_groups < FOLDS:
        return f"its labeled steps are in {n_groups} room group(s), and {FOLDS} folds need {FOLDS}"
    if smallest_class < FOLDS:
        return f"one class has {smallest_class} labeled step(s), and {FOLDS} folds need {FOLDS} of each"
    return None


def out_of_fold(X: np.ndarray, y: np.ndarray, groups: np.ndarray, max_fit: int = MAX_FIT) -> np.ndarray:
    """Each row's class probabilities (columns 0, 1) from the forest fit on the other folds."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GroupKFold, cross_val_predict

    from .capped_fit import CappedFit  # here: scikit-learn is imported by the review page's doubt order only

    return cross_val_predict(CappedFit(RandomForestClassifier(**FOREST), max_fit), X, y, groups=groups,
                             cv=GroupKFold(n_splits=FOLDS), method="predict_proba")


def rank_by_cleanlab(y: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cleanlab's self-confidence of each given label, and whether it calls the label an issue."""
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    confidence = get_label_quality_scores(y, probabilities, method="self_confidence")
    issue = find_label_issues(y, probabilities)
    return np.asarray(confidence, dtype=float), np.asarray(issue, dtype=bool)
