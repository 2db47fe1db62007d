"""An estimator fit on a capped, seeded subsample of what it is given (the label-doubt forest's
folds, ``label_doubt.out_of_fold``). Its own module: scikit-learn's base classes are needed to
define it, and the modules that declare the review page must not import scikit-learn."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class CappedFit(ClassifierMixin, BaseEstimator):
    """``estimator`` fit on at most ``max_rows`` rows (seeded subsample, seed 0) of what it is
    given; every row when ``max_rows`` is None. The cap is the caller's (``label_doubt.MAX_FIT``)."""

    def __init__(self, estimator=None, max_rows: int | None = None) -> None:
        self.estimator = estimator
        self.max_rows = max_rows

    def fit(self, X, y) -> CappedFit:
        from sklearn.base import clone

        from ..detectors.registry import seeded_subsample

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
