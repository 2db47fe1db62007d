"""Cross-backbone robustness (MAADBench Figure 7 left): train on backbone A, test on B.

For each seed, one room-disjoint split over *all* runs of the corpus (the same room is played
under every backbone, so splitting per backbone would test on rooms seen in training); then,
per detector and training backbone A, the detector is fitted on A's training steps (the rows
its registry entry chooses for its supervision, as in the engine) and scores every test step;
cell (A, B) is the ROC-AUC over B's labeled test steps. The diagonal is therefore the ordinary
within-backbone score, on the same held-out rooms as the off-diagonal cells. Cells are
averaged over seeds; a cell whose test steps hold one class is undefined (None, with the
reason), never 0.5.

Computed on request and not stored: it is a view of detectors, not a prediction set.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AtlasError, UndefinedMetric
from ..progress import Progress, or_quiet
from ..query_function import Query
from ..stats import roc_auc, spread
from ..view_state.state_fields import copy_shared
from . import DEFAULT_FEATURE_SET
from .executors import Cancelled, ShouldStop, execute
from .features import check_feature_set, step_features
from .jobs import Unit, score_parts
from .request import detector_list, scorable_corpora, seed_list, slice_corpora
from .splits import TEST_SIZE, group_split


@dataclass
class CrossMatrix:
    """ROC-AUC of one detector trained on each backbone (rows) and tested on each (columns)."""

    detector: str
    backbones: list[str]
    mean: np.ndarray  # (train x test), NaN where undefined
    std: np.ndarray
    seeds: np.ndarray  # number of seeds with a defined value per cell
    test_pos: dict[str, int]  # anomalous labeled test steps per test backbone (first seed)
    test_neg: dict[str, int]
    notes: list[str] = field(default_factory=list)

    def frame(self) -> pd.DataFrame:
        """Long form: one row per (train, test) cell."""
        rows = []
        for i, a in enumerate(self.backbones):
            for j, b in enumerate(self.backbones):
                value = self.mean[i, j]
                rows.append({"detector": self.detector, "train_backbone": a, "test_backbone": b,
                             "roc_auc": None if np.isnan(value) else float(value),
                             "std": None if np.isnan(self.std[i, j]) else float(self.std[i, j]),
                             "seeds": int(self.seeds[i, j]), "test_anomalies": self.test_pos.get(b, 0),
                             "test_normals": self.test_neg.get(b, 0)})
        return pd.DataFrame(rows)


@dataclass
class CrossResult:
    corpus: str
    feature_set: str
    seeds: list[int]
    matrices: list[CrossMatrix]
    notes: list[str]
    executor: str


def _pick_corpus(query: Query, slice_: Mapping[str, Any], corpus: str | None) -> tuple[str, list[str]]:
    counts = slice_corpora(query, slice_)
    ok, notes = scorable_corpora(counts)
    if corpus is not None:
        if corpus not in ok:
            raise UndefinedMetric(next((n for n in notes if f"'{corpus}'" in n),
                                       f"corpus '{corpus}' is not in the slice or holds no labeled steps."))
        return corpus, []
    if not ok:
        raise UndefinedMetric(" ".join(notes) if notes else "the slice holds no steps to score.")
    return ok[0], ([f"the slice holds several corpora; the matrix is computed on '{ok[0]}'."] if len(ok) > 1 else [])


def cross_backbone(
    root: str | Path,
    detectors: Sequence[str],
    slice: Mapping[str, Any] | None = None,
    seeds: int | Sequence[int] = 1,
    feature_set: str = DEFAULT_FEATURE_SET,
    *,
    corpus: str | None = None,
    client: Any = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    test_size: float = TEST_SIZE,
) -> CrossResult:
    """The train-on-A / test-on-B ROC-AUC matrix of each detector on one corpus of the slice.

    Raises UndefinedMetric when the corpus has fewer than two backbones or no corpus of the
    slice holds both anomalous and normal labeled steps.
    """
    root = Path(root)
    report = or_quiet(progress)
    chosen = detector_list(detectors)
    seed_values = seed_list(seeds)
    check_feature_set(feature_set)
    slice_ = copy_shared(slice, drop_empty=True)  # the label choice too: fitted and scored on it
    from queries import runner  # reads the store through the query layer, as the engine does

    query = runner(root)
    corpus, notes = _pick_corpus(query, slice_, corpus)
    report(0.0, f"reading step features of {corpus}")
    features = step_features(query, corpus, slice_, feature_set)
    run_backbone = features.runs["backbone"].to_numpy(dtype=object)
    backbones = sorted({b for b in run_backbone if b is not None and b == b})
    if len(backbones) < 2:
        raise UndefinedMetric(f"corpus '{corpus}' has {len(backbones)} backbone(s) in this slice; a cross-backbone "
                              "matrix needs at least two.")
    step_backbone = pd.Categorical(run_backbone[features.run_pos], categories=backbones).codes  # -1 = none

    units: list[Unit] = []
    splits: dict[int, np.ndarray] = {}
    for seed in seed_values:
        split = group_split(features.runs, seed, test_size)
        test_step = split.test_run[features.run_pos]
        test_rows = np.flatnonzero(test_step)
        splits[seed] = test_rows
        for detector in chosen:
            for a, name in enumerate(backbones):
                train = ~test_step & (step_backbone == a)
                training = detector.training_rows(train, features.label, seed)
                if training.problem:
                    notes.append(f"{detector.name}, seed {seed}, trained on {name}: {training.problem}; row left blank.")
                    continue
                units.append(Unit(detector, seed, training, score_parts(detector, len(test_rows)), score_rows=test_rows,
                                  tag=(seed, a)))

    total = sum(u.jobs() for u in units)
    done = [0]

    def tick(message: str) -> None:
        done[0] += 1
        report(0.1 + 0.85 * done[0] / max(total, 1), f"{message} ({done[0]}/{total} jobs)")
        if should_stop is not None and should_stop():
            raise Cancelled("cross-backbone matrix cancelled.")

    executor = execute(units, features.X, client, tick, should_stop)

    k = len(backbones)
    values: dict[str, dict[tuple[int, int], list[float]]] = {d.name: {} for d in chosen}
    undefined: dict[str, dict[tuple[int, int], str]] = {d.name: {} for d in chosen}
    first = seed_values[0]
    test_pos: dict[str, int] = {}
    test_neg: dict[str, int] = {}
    for b, name in enumerate(backbones):
        rows = splits[first]
        y = features.label[rows]
        mask = (step_backbone[rows] == b) & ~np.isnan(y)
        test_pos[name], test_neg[name] = int((y[mask] == 1).sum()), int((y[mask] == 0).sum())
    for unit in units:
        seed, a = unit.tag
        scores, _ = unit.scores()
        rows = unit.score_rows
        y = features.label[rows]
        for b in range(k):
            mask = (step_backbone[rows] == b) & ~np.isnan(y)
            try:
                auc = roc_auc(y[mask].astype(np.int64), scores[mask])
            except UndefinedMetric as exc:
                undefined[unit.detector.name][(a, b)] = str(exc)
                continue
            values[unit.detector.name].setdefault((a, b), []).append(auc)

    matrices = []
    for detector in chosen:
        mean = np.full((k, k), np.nan)
        std = np.full((k, k), np.nan)
        count = np.zeros((k, k), dtype=int)
        for (a, b), aucs in values[detector.name].items():
            mean[a, b] = float(np.mean(aucs))
            std[a, b] = spread(aucs).sd  # the sample sd over seeds (ddof=1), as every spread over seeds
            count[a, b] = len(aucs)
        cell_notes = [f"train {backbones[a]}, test {backbones[b]}: {why}"
                      for (a, b), why in sorted(undefined[detector.name].items()) if count[a, b] == 0]
        matrices.append(CrossMatrix(detector.name, backbones, mean, std, count, test_pos, test_neg, cell_notes))
    report(1.0, "cross-backbone matrix ready")
    return CrossResult(corpus, feature_set, seed_values, matrices, notes, executor)


def result_json(result: CrossResult) -> dict[str, Any]:
    """A JSON-ready form of the matrices (None where undefined)."""
    def cell(x: float) -> float | None:
        return None if np.isnan(x) else round(float(x), 6)

    return {
        "corpus": result.corpus, "feature_set": result.feature_set, "seeds": result.seeds, "executor": result.executor,
        "notes": result.notes,
        "detectors": [{"detector": m.detector, "backbones": m.backbones,
                       "roc_auc": [[cell(x) for x in row] for row in m.mean],
                       "std": [[cell(x) for x in row] for row in m.std],
                       "seeds": m.seeds.tolist(), "test_anomalies": m.test_pos, "test_normals": m.test_neg,
                       "notes": m.notes} for m in result.matrices],
    }


def require_defined(result: CrossResult) -> None:
    """AtlasError when no cell of any matrix has a value (nothing to show)."""
    if all(np.isnan(m.mean).all() for m in result.matrices):
        raise AtlasError("no cell of the cross-backbone matrix is defined on this slice: " + "; ".join(result.notes[:3]))
