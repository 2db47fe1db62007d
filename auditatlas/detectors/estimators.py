"""The registry's own estimators (``registry.py`` names them, its factories build them): the
random floor, a feature column as a score, and a classifier's anomaly probability as a
detector's score. Their own module because defining them needs scikit-learn's base classes,
and the registry must stay cheap to import.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone

from .registry import CONTAMINATION


class RandomDetector(BaseEstimator):
    """Uniform random scores: the floor every detector is read against.

    ``decision_function`` draws ``numpy.random.RandomState(random_state).rand(len(X))`` afresh
    on each call, so a population scored in one call gets the same numbers every time (the
    boards' ``random`` entrant is exactly this with ``random_state=0``). ``decision_scores_``
    holds the draw for the fitted rows, as PyOD detectors do.
    """

    def __init__(self, contamination: float = CONTAMINATION, random_state: int | None = None) -> None:
        self.contamination = contamination
        self.random_state = random_state

    def fit(self, X, y=None) -> "RandomDetector":
        self.decision_scores_ = self.decision_function(X)
        # Uniform scores: the (1 - contamination) quantile is known without looking at them.
        self.threshold_ = 1.0 - float(self.contamination)
        self.labels_ = (self.decision_scores_ > self.threshold_).astype(np.int8)
        return self

    def decision_function(self, X) -> np.ndarray:
        return np.random.RandomState(self.random_state).rand(len(X))

    def predict(self, X) -> np.ndarray:
        return (self.decision_function(X) > 1.0 - float(self.contamination)).astype(np.int8)


class ColumnScore(BaseEstimator):
    """A score read straight off one feature column (a hand-made detector, no learning).

    Used for the LIVE board's ``dep-span (online)``: a run's mean dependency span.
    """

    def __init__(self, column: int = 0) -> None:
        self.column = column

    def fit(self, X, y=None) -> "ColumnScore":
        self.decision_scores_ = self.decision_function(X)
        return self

    def decision_function(self, X) -> np.ndarray:
        return np.asarray(X, dtype=float)[:, self.column]


class ProbabilityDetector(BaseEstimator):
    """A binary classifier as a detector: ``decision_function`` = P(anomaly).

    Probabilities (not raw margins) keep every seed and every classifier on one scale, so
    seed-averaged scores mean something. ``predict`` is the classifier's own decision.
    """

    def __init__(self, classifier=None) -> None:
        self.classifier = classifier

    def fit(self, X, y):
        self.classifier_ = clone(self.classifier).fit(X, y)
        classes = list(self.classifier_.classes_)
        if 1 not in classes:
            raise ValueError("a supervised detector needs anomalous (label 1) training rows.")
        self.positive_ = classes.index(1)
        return self

    def predict_proba(self, X) -> np.ndarray:
        return self.classifier_.predict_proba(X)

    def decision_function(self, X) -> np.ndarray:
        return self.classifier_.predict_proba(X)[:, self.positive_]

    def predict(self, X) -> np.ndarray:
        return np.asarray(self.classifier_.predict(X)).astype(np.int8)
