"""The detector registry: one entry per detector, scikit-learn/PyOD estimator style.

An entry is data: a name (what the CLI, the page and ``prediction_sets.method`` say), a family
(``baseline`` for the random floor, ``tabular`` for detectors on feature vectors; graph and LLM
detectors would bring their own), a supervision mode, and a factory ``seed -> estimator``. Every
estimator the factories return has one interface, so the engine and the boards never ask what
kind of detector they hold:

- ``fit(X, y=None)``; parameters live in ``__init__`` (``get_params`` is the provenance);
- ``decision_function(X)``: higher = more anomalous (PyOD's convention; a supervised
  classifier's is its probability of the anomalous class, see :class:`ProbabilityDetector`);
- ``predict(X)``: the estimator's own 0/1 decision (PyOD: the contamination threshold on its
  training scores; a classifier: its class prediction).

Supervision modes say which rows a detector is fitted on (``Detector.training_rows``, which the
engine and the cross-backbone matrix ask): ``unsupervised`` on every training step, labels
unseen; ``one-class`` on the normal training steps only; ``supervised`` on the labeled training
steps with their labels. Unlabeled steps (label null) are scored but never used as a label.

Adding a detector is one ``Detector(...)`` line in ``DETECTORS``. The run-level boards name
the detectors their entrants use in their own ordered entrant lists
(``Board.entrants`` of ``auditatlas.analyses.board_detection.POST_BOARD`` and ``LIVE_BOARD``).

PyOD and scikit-learn are imported inside the factories (the estimators themselves live in
``estimators.py``): importing the registry stays cheap, and every page imports it through the
view declarations.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

SUPERVISIONS: tuple[str, ...] = ("unsupervised", "one-class", "supervised")
FAMILIES: tuple[str, ...] = ("baseline", "tabular")  # detector families


# ------------------------------------------------------------------------------- factories

def _random(seed: int):
    from .estimators import CONTAMINATION, RandomDetector

    return RandomDetector(contamination=CONTAMINATION, random_state=seed)


def _column(seed: int):
    from .estimators import ColumnScore

    return ColumnScore(column=0)


def _iforest(seed: int):
    from pyod.models.iforest import IForest

    from .estimators import CONTAMINATION

    return IForest(n_estimators=100, contamination=CONTAMINATION, random_state=seed)


def _knn(seed: int):
    from pyod.models.knn import KNN

    from .estimators import CONTAMINATION

    return KNN(n_neighbors=5, method="largest", contamination=CONTAMINATION)


def _lof(seed: int):
    from pyod.models.lof import LOF

    from .estimators import CONTAMINATION

    return LOF(n_neighbors=20, contamination=CONTAMINATION)


def _ecod(seed: int):
    from .estimators import TailProbabilities

    return TailProbabilities("ecod")


def _copod(seed: int):
    from .estimators import TailProbabilities

    return TailProbabilities("copod")


def _hbos(seed: int):
    import pyod.models.hbos as hbos

    from .compiled import cache_kernels
    from .estimators import CONTAMINATION

    cache_kernels(hbos, "_calculate_outlier_scores", "_calculate_outlier_scores_auto")
    return hbos.HBOS(n_bins=10, contamination=CONTAMINATION)


def _ocsvm(seed: int):
    from pyod.models.ocsvm import OCSVM

    from .estimators import CONTAMINATION

    return OCSVM(kernel="rbf", nu=0.1, gamma="auto", contamination=CONTAMINATION)


def _logreg(seed: int):
    """Standardize + class-balanced liblinear logistic regression.

    The learner of auditable's ``run.lr_*`` run detectors, hence of the boards' supervised
    entrants (``tests/test_detection.py`` checks it equals auditable's); liblinear's primal
    solver is deterministic, so the seed changes nothing here.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from .estimators import ProbabilityDetector

    return ProbabilityDetector(
        make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear", class_weight="balanced"))
    )


def _random_forest(seed: int):
    from sklearn.ensemble import RandomForestClassifier

    from .estimators import ProbabilityDetector

    # Each tree on a bootstrap half of the rows: half the cost, the forest as good.
    return ProbabilityDetector(RandomForestClassifier(
        n_estimators=100, min_samples_leaf=2, max_samples=0.5, class_weight="balanced", n_jobs=1, random_state=seed))


def _hist_gb(seed: int):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from .estimators import ProbabilityDetector

    return ProbabilityDetector(HistGradientBoostingClassifier(
        max_iter=100, class_weight="balanced", early_stopping=False, random_state=seed))


# ------------------------------------------------------------------------------- entries

@dataclass(frozen=True)
class TrainingRows:
    """The rows one fit uses, as its detector's supervision decides.

    ``rows``: indices into the step matrix; ``y``: their labels (supervised detectors only);
    ``described``: what the rows are, recorded in the prediction set's provenance
    (``params.fit_rows``); ``problem``: why no fit is possible on them (None when one is).
    """

    rows: np.ndarray
    y: np.ndarray | None
    described: str
    problem: str | None


@dataclass(frozen=True)
class Detector:
    """One registry entry. ``make(seed)`` returns a fresh, unfitted estimator.

    ``max_train`` caps the rows the engine fits on (a seeded subsample, recorded on every
    prediction set; see ``SMALL_FIT`` / ``LARGE_FIT``); the boards' run-level fits ignore it
    (a corpus has at most thousands of runs). ``scale``
    asks the engine to standardize features on the training rows first (distance- and
    kernel-based detectors; the rest are scale-free or scale themselves). ``engine=False``
    keeps an entry out of step scoring (a board-only entrant).
    """

    name: str
    title: str
    family: str
    supervision: str
    factory: Callable[[int], Any]
    max_train: int | None = None
    scale: bool = False
    reads_features: bool = True
    engine: bool = True

    def make(self, seed: int = 0) -> Any:
        return self.factory(int(seed))

    def training_rows(self, train: np.ndarray, label: np.ndarray, seed: int) -> TrainingRows:
        """The rows this detector is fitted on, of the steps marked ``train`` (bool per step)
        with labels ``label`` (1, 0 or NaN per step).

        By supervision: unsupervised on every training step; one-class on the normal ones;
        supervised on the labeled ones, with their labels. A null label is never a label. Where
        ``max_train`` caps the size, a subsample seeded by ``seed`` (the split's seed, so a
        re-run fits on the same rows).
        """
        if self.supervision == "supervised":
            rows = np.flatnonzero(train & ~np.isnan(label))
            described = "labeled training steps"
        elif self.supervision == "one-class":
            rows = np.flatnonzero(train & (label == 0))
            described = "normal training steps"
        else:
            rows = np.flatnonzero(train)
            described = "training steps (labels unused)"
        if self.max_train is not None and len(rows) > self.max_train:
            rows = seeded_subsample(rows, self.max_train, seed)
            described += f", seeded subsample of {self.max_train:,}"
        y = label[rows].astype(np.int64) if self.supervision == "supervised" else None
        return TrainingRows(rows.astype(np.int64), y, described, self._training_problem(rows, y))

    def _training_problem(self, rows: np.ndarray, y: np.ndarray | None) -> str | None:
        if self.supervision == "supervised":
            if y is None or len(np.unique(y)) < 2:
                have = "no anomalous" if y is None or not (y == 1).any() else "no normal"
                return f"the training split holds {have} labeled step, so a supervised detector cannot be fitted"
        elif len(rows) < 2:
            return f"the training split holds {len(rows)} usable step(s)"
        return None

    @property
    def estimator_class(self) -> str:
        est = self.make(0)
        inner = getattr(est, "classifier", None)
        cls = type(inner if inner is not None else est)
        return f"{cls.__module__}.{cls.__qualname__}"


# Training-row caps (a seeded subsample, recorded on every prediction set). Neighbour and
# kernel detectors cost O(n_train) per scored step, so 2,000 rows. The rest are capped at
# 200,000: past that a model on ~40 columns learns nothing new, while liblinear's logistic
# regression takes 25 s on 740k rows (4 s on 200k), PyOD's IForest scores all its training
# rows inside fit, and ECOD/COPOD rank every scored row among the training rows. A capped
# fit is also what lets the engine score a large corpus a chunk at a time: it gathers the
# fits' rows, never the corpus's matrix (HBOS's histograms are the same from 200,000 rows).
SMALL_FIT = 2_000
LARGE_FIT = 200_000

DETECTORS: tuple[Detector, ...] = (
    Detector("random", "Random", "baseline", "unsupervised", _random, reads_features=False),
    Detector("iforest", "Isolation Forest (PyOD)", "tabular", "unsupervised", _iforest, max_train=LARGE_FIT),
    Detector("knn", "KNN (PyOD)", "tabular", "unsupervised", _knn, max_train=SMALL_FIT, scale=True),
    Detector("lof", "LOF (PyOD)", "tabular", "unsupervised", _lof, max_train=SMALL_FIT, scale=True),
    Detector("ecod", "ECOD (PyOD)", "tabular", "unsupervised", _ecod, max_train=LARGE_FIT),
    Detector("copod", "COPOD (PyOD)", "tabular", "unsupervised", _copod, max_train=LARGE_FIT),
    Detector("hbos", "HBOS (PyOD)", "tabular", "unsupervised", _hbos, max_train=LARGE_FIT),
    Detector("ocsvm", "One-class SVM (PyOD)", "tabular", "one-class", _ocsvm, max_train=SMALL_FIT, scale=True),
    Detector("logreg", "Logistic regression", "tabular", "supervised", _logreg, max_train=LARGE_FIT),
    Detector("random-forest", "Random forest", "tabular", "supervised", _random_forest, max_train=LARGE_FIT),
    Detector("hist-gb", "Histogram gradient boosting", "tabular", "supervised", _hist_gb, max_train=LARGE_FIT),
    Detector("dep-span", "Mean dependency span", "tabular", "unsupervised", _column, engine=False),
)


def _check(entries: tuple[Detector, ...]) -> None:
    names = [d.name for d in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate detector names in the registry: {names}")
    for d in entries:
        if d.supervision not in SUPERVISIONS or d.family not in FAMILIES:
            raise ValueError(f"detector '{d.name}': unknown supervision or family")


_check(DETECTORS)


def registry() -> dict[str, Detector]:
    """Every detector by name, in registry order."""
    return {d.name: d for d in DETECTORS}


def engine_detectors() -> list[str]:
    """Names of the detectors the step engine can score (all but board-only entries)."""
    return [d.name for d in DETECTORS if d.engine]


def get(name: str) -> Detector:
    """The entry called ``name``; AtlasError with the valid names otherwise."""
    from ..errors import AtlasError

    entries = registry()
    if name not in entries:
        raise AtlasError(f"unknown detector '{name}'; choose from: {', '.join(engine_detectors())}.")
    return entries[name]


def seeded_subsample(rows: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` of ``rows`` (all of them when there are no more), drawn by ``seed`` and kept in
    order: how a large fit is capped (a re-run with the same seed fits on the same rows)."""
    if len(rows) <= size:
        return rows
    return np.sort(rows[np.random.RandomState(seed).choice(len(rows), size, replace=False)])
