"""The registry's own estimators (``registry.py`` names them, its factories build them): the
random floor, a feature column as a score, PyOD's ECOD and COPOD scoring each row on its own,
and a classifier's anomaly probability as a detector's score. Their own module because defining
them needs scikit-learn's base classes, and the registry must stay cheap to import.

``ScoreDetector`` is PyOD's contract for a detector written here: a subclass says only how it
scores (``decision_function``); fitting keeps the training scores and the contamination
threshold, and ``predict`` applies it, as every PyOD detector does.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone

# PyOD's default share of outliers; the threshold behind every unsupervised pred_label.
CONTAMINATION = 0.1


class ScoreDetector(BaseEstimator):
    """A detector that scores (higher = more anomalous) and decides by PyOD's contamination rule.

    ``fit`` keeps ``decision_scores_`` (the training rows' scores), ``threshold_`` (the
    (1 - contamination) quantile of them, PyOD's) and ``labels_``; ``predict`` is
    ``decision_function > threshold_``. A subclass that takes ``contamination`` as a parameter
    sets it in its ``__init__``; one that does not reads the default below.
    """

    contamination = CONTAMINATION

    def fit(self, X, y=None) -> ScoreDetector:
        self.decision_scores_ = self.decision_function(X)
        self.threshold_ = self._threshold(self.decision_scores_)
        self.labels_ = (self.decision_scores_ > self.threshold_).astype(np.int8)
        return self

    def _threshold(self, scores: np.ndarray) -> float:
        return float(np.percentile(scores, 100 * (1 - float(self.contamination)))) if len(scores) else np.inf

    def decision_function(self, X) -> np.ndarray:
        raise NotImplementedError

    def predict(self, X) -> np.ndarray:
        return (self.decision_function(X) > self.threshold_).astype(np.int8)


class RandomDetector(ScoreDetector):
    """Uniform random scores: the floor every detector is read against.

    ``decision_function`` draws ``numpy.random.RandomState(random_state).rand(len(X))`` afresh
    on each call, so a population scored in one call gets the same numbers every time (the
    boards' ``random`` entrant is exactly this with ``random_state=0``). ``decision_scores_``
    holds the draw for the fitted rows, as PyOD detectors do.
    """

    def __init__(self, contamination: float = CONTAMINATION, random_state: int | None = None) -> None:
        self.contamination = contamination
        self.random_state = random_state

    def _threshold(self, scores: np.ndarray) -> float:
        # Uniform scores: the (1 - contamination) quantile is known without looking at them.
        return 1.0 - float(self.contamination)

    def decision_function(self, X) -> np.ndarray:
        return np.random.RandomState(self.random_state).rand(len(X))


class ColumnScore(ScoreDetector):
    """A score read straight off one feature column (a hand-made detector, no learning).

    Used for the LIVE board's ``dep-span (online)``: a run's mean dependency span.
    """

    def __init__(self, column: int = 0) -> None:
        self.column = column

    def decision_function(self, X) -> np.ndarray:
        return np.asarray(X, dtype=float)[:, self.column]


class TailProbabilities(ScoreDetector):
    """ECOD or COPOD (PyOD's, ``method``) that scores a row against the training rows alone.

    PyOD scores a batch by ranking the training rows together with the whole batch, so a step's
    score depended on the steps scored beside it: the engine splits a corpus into chunks and
    score jobs, and the same step scored in another split got another score. Here a row's tail
    probabilities in each column are (training values <= x, plus one) / (n + 1) on the left and
    (training values >= x, plus one) / (n + 1) on the right, what PyOD gives a batch of that one
    row, with the training rows' skewness: a row's score is the same in any batch. Fitting is
    PyOD's own (its ``decision_scores_``, each training row ranked among the training rows, and
    its ``threshold_``), so what reads the fitted rows' scores, as the boards do, is unchanged.
    """

    METHODS = ("ecod", "copod")

    def __init__(self, method: str = "ecod", contamination: float = CONTAMINATION) -> None:
        self.method = method
        self.contamination = contamination

    def fit(self, X, y=None) -> TailProbabilities:
        if self.method not in self.METHODS:
            raise ValueError(f"unknown tail method {self.method!r}; one of {self.METHODS}")
        if self.method == "ecod":
            from pyod.models.ecod import ECOD as Model
            from pyod.models.ecod import skew
        else:
            from pyod.models.copod import COPOD as Model
            from pyod.models.copod import skew
        X = np.asarray(X, dtype=float)
        model = Model(contamination=self.contamination).fit(X)
        self.decision_scores_ = np.asarray(model.decision_scores_, dtype=float)
        self.threshold_ = float(model.threshold_)
        self.labels_ = np.asarray(model.labels_, dtype=np.int8)
        del model  # it holds its tails of every training row, several copies of X
        self.sorted_ = np.sort(X, axis=0)
        self.skew_sign_ = np.sign(skew(X, axis=0))
        return self

    def decision_function(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        n = self.sorted_.shape[0]
        total = np.zeros(X.shape[0])
        # A column at a time, its share added: a score job's rows times one column at most, where
        # the whole matrix's tails would be several copies of it.
        for j in range(X.shape[1]):
            column, x, sign = self.sorted_[:, j], X[:, j], self.skew_sign_[j]
            left = -np.log((np.searchsorted(column, x, side="right") + 1) / (n + 1))
            right = -np.log((n - np.searchsorted(column, x, side="left") + 1) / (n + 1))
            # PyOD's skew-corrected tail: the left one for a left-skewed column, the right one
            # for a right-skewed column, both for a symmetric one.
            skewed = left * -np.sign(sign - 1) + right * np.sign(sign + 1)
            if self.method == "ecod":
                total += np.maximum(np.maximum(left, right), skewed)
            else:
                total += np.maximum(skewed, (left + right) / 2)
        return total


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
