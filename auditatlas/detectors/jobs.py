"""What a scoring job is: the fit job and the score jobs of one (detector, seed) unit.

A *unit* is one (detector, seed) fit and the score jobs that use it. The fit job fits the
registry detector on the rows its entry chose (``Detector.training_rows``); columns constant on
those rows are dropped and, for distance/kernel detectors, the rest standardized on them. Each
score job scores ``PARTITION_ROWS`` steps, so a large slice spreads over the workers.

Jobs are module-level functions of plain arguments (a registry name, arrays): Dask pickles
them by reference, and they never receive the store.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UndefinedMetric
from . import registry
from .meter import Meter

PARTITION_ROWS = 250_000  # steps per score job


@dataclass
class Fitted:
    """A fitted detector and what the score jobs and provenance need from its fit."""

    model: Any
    keep: np.ndarray | None  # column indices the model reads; None: it reads no column, only the rows
    seconds: float
    cpu_seconds: float
    grew_mb: float
    rss_mb: float
    n_fit: int


def fit_job(name: str, seed: int, X: np.ndarray, rows: np.ndarray, y: np.ndarray | None) -> Fitted:
    """Fit registry detector ``name`` on rows ``rows`` of X (labels ``y`` when supervised)."""
    import warnings

    detector = registry.get(name)
    with Meter() as meter:
        fit_X = X[rows]
        if detector.reads_features:
            keep = np.flatnonzero(np.ptp(fit_X, axis=0) > 0) if len(fit_X) else np.zeros(0, dtype=np.int64)
            if keep.size == 0:
                raise UndefinedMetric(f"{name}: no feature varies on the {len(rows):,} rows it would be fitted on.")
            fit_X = fit_X[:, keep]
        else:
            keep = None
        model = detector.make(seed)
        if detector.scale:
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            model = make_pipeline(StandardScaler(), model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; provenance records the params
            model.fit(fit_X, y) if y is not None else model.fit(fit_X)
        del fit_X
    return Fitted(model, keep, meter.seconds, meter.cpu_seconds, meter.grew_mb, meter.rss_mb, len(rows))


@dataclass
class Scored:
    """Scores and 0/1 decisions of one score job's rows, starting at row ``lo``."""

    lo: int
    scores: np.ndarray
    labels: np.ndarray
    seconds: float
    cpu_seconds: float
    grew_mb: float
    rss_mb: float


def estimator(model: Any) -> Any:
    """The detector inside a fitted model (the last step of a scaling pipeline)."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def decisions(model: Any, X: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The estimator's own 0/1 decision, without scoring twice.

    PyOD's ``predict`` is ``decision_function > threshold_`` (the contamination quantile of
    its training scores), and a binary probabilistic classifier's ``predict`` is P(1) > 0.5,
    so both follow from the scores already computed; anything else is asked.
    """
    last = estimator(model)
    threshold = getattr(last, "threshold_", None)
    if threshold is not None:
        return (scores > threshold).astype(np.int8)
    if _is_probability_detector(last):
        return (scores > 0.5).astype(np.int8)
    return np.asarray(model.predict(X), dtype=np.int8)


def decision_rule(model: Any) -> str:
    """How ``decisions`` decides for this model, in words (``params.pred_label``)."""
    last = estimator(model)
    if getattr(last, "threshold_", None) is not None:
        return "score above the threshold_ of its training scores (PyOD contamination)"
    if _is_probability_detector(last):
        return "P(anomaly) > 0.5 (the classifier's predict)"
    return "estimator predict"


def _is_probability_detector(model: Any) -> bool:
    # Imported here, not at the top: the estimators module imports scikit-learn (0.8 s), and
    # the re-score page imports this module on every open, long before anything is fitted.
    from .estimators import ProbabilityDetector

    return isinstance(model, ProbabilityDetector)


def score_job(fitted: Fitted, X: np.ndarray, lo: int, hi: int, rows: np.ndarray | None = None) -> Scored:
    """Scores and decisions of rows [lo, hi) of X (of X[rows] when ``rows`` is given)."""
    with Meter() as meter:
        part = X[lo:hi] if rows is None else X[rows[lo:hi]]
        part = part if fitted.keep is None else part[:, fitted.keep]
        scores = np.asarray(fitted.model.decision_function(part), dtype=np.float64)
        labels = decisions(fitted.model, part, scores)
        del part
    return Scored(lo, scores, labels, meter.seconds, meter.cpu_seconds, meter.grew_mb, meter.rss_mb)


def score_parts(detector: registry.Detector, n: int, partition_rows: int = PARTITION_ROWS,
                bounds: list[int] | None = None) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) of the score jobs over ``n`` rows, within each of the chunks whose
    first rows are ``bounds`` (the features read a chunk of runs at a time; one chunk when
    None).

    A detector that reads no features gets one job over all rows: the random floor draws its
    scores in one seeded call over the population, so splitting it would change its numbers.
    """
    if not detector.reads_features:
        return [(0, n)]
    size = max(1, int(partition_rows))
    edges = [0, n] if bounds is None else list(bounds)
    return [(lo, min(hi, lo + size)) for start, hi in zip(edges, edges[1:]) for lo in range(start, hi, size)]


@dataclass
class Unit:
    """One (detector, seed) fit and the score jobs that use it.

    For a re-score it is one prediction set (every step scored, ``parts`` ranges over all
    steps); for the cross-backbone matrix ``score_rows`` names the steps to score (the test
    steps) and ``parts`` ranges over that list. ``tag`` is the caller's bookkeeping.
    """

    detector: registry.Detector
    seed: int
    training: registry.TrainingRows
    parts: list[tuple[int, int]]
    score_rows: np.ndarray | None = None
    test_run: np.ndarray | None = None  # bool per run of features.runs
    test_step: np.ndarray | None = None  # bool per step
    split_info: dict[str, Any] = field(default_factory=dict)
    tag: Any = None
    fitted: Fitted | None = None
    scored: list[Scored] = field(default_factory=list)

    def jobs(self) -> int:
        """How many jobs the unit takes: its fit and its score jobs (what progress counts)."""
        return 1 + len(self.parts)

    def scores(self) -> tuple[np.ndarray, np.ndarray]:
        """Scores and decisions of the scored rows, in row order."""
        parts = sorted(self.scored, key=lambda s: s.lo)
        return np.concatenate([p.scores for p in parts]), np.concatenate([p.labels for p in parts])
