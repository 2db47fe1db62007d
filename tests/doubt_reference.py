"""The supervised half of label doubt as scikit-learn computes it over a corpus's whole matrix:
``cross_val_predict`` of a capped forest over group folds. The reference that the product's
chunked half (auditatlas/analyses/label_doubt.py, which reads a corpus a chunk of runs at a
time) must equal; the product itself never holds the whole matrix."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class CappedFit(ClassifierMixin, BaseEstimator):
    """``estimator`` fit on at most ``max_rows`` rows (seeded subsample, seed 0) of what it is
    given; every row when ``max_rows`` is None."""

    def __init__(self, estimator=None, max_rows: int | None = None) -> None:
        self.estimator = estimator
        self.max_rows = max_rows

    def fit(self, X, y) -> CappedFit:
        from sklearn.base import clone

        from auditatlas.detectors.registry import seeded_subsample

        rows = np.arange(len(y))
        if self.max_rows is not None:
            rows = seeded_subsample(rows, self.max_rows, seed=0)
        self.estimator_ = clone(self.estimator).fit(X[rows], y[rows])
        self.classes_ = self.estimator_.classes_
        return self

    def predict_proba(self, X) -> np.ndarray:
        return self.estimator_.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        return self.estimator_.predict(X)


def out_of_fold(X: np.ndarray, y: np.ndarray, groups: np.ndarray, max_fit: int) -> np.ndarray:
    """Each row's class probabilities (columns 0, 1) from the forest fit on the other folds."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import GroupKFold, cross_val_predict

    from auditatlas.analyses.label_doubt import FOLDS, FOREST

    return cross_val_predict(CappedFit(RandomForestClassifier(**FOREST), max_fit), X, y, groups=groups,
                             cv=GroupKFold(n_splits=FOLDS), method="predict_proba")
