"""Step-detection metrics with their undefined cases said out loud.

ROC-AUC is ``auditatlas.stats.roc_auc`` (Mann-Whitney, ties count one half), which raises
``UndefinedMetric`` on a single class: an undefined ROC-AUC is never reported as 0.5, which
would read as "a random detector". The thresholded metrics (F1, accuracy, balanced accuracy)
are scikit-learn's, with the cases where they have no value reported as ``None`` plus a reason
instead of scikit-learn's silent 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import UndefinedMetric
from ..stats import roc_auc


@dataclass(frozen=True)
class Summary:
    """Metrics of one prediction set over labeled steps; ``None`` where undefined (see ``notes``)."""

    n_pos: int
    n_neg: int
    roc_auc: float | None
    f1: float | None
    accuracy: float | None
    balanced_accuracy: float | None
    notes: dict[str, str] = field(default_factory=dict)


def summarize(y: Sequence[int], scores: Sequence[float], pred: Sequence[int] | None = None) -> Summary:
    """ROC-AUC from scores; F1, accuracy and balanced accuracy from ``pred`` (when given)."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    y = np.asarray(y, dtype=np.int64)
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    notes: dict[str, str] = {}
    try:
        auc = roc_auc(y, scores)
    except UndefinedMetric as exc:
        auc, notes["roc_auc"] = None, str(exc)
    f1 = acc = bacc = None
    if pred is None:
        notes["f1"] = notes["accuracy"] = notes["balanced_accuracy"] = "the set carries no decisions (pred_label)."
    else:
        pred = np.asarray(pred, dtype=np.int64)
        if y.size == 0:
            notes["accuracy"] = "no labeled step."
        else:
            acc = float(accuracy_score(y, pred))
        if n_pos and n_neg:
            bacc = float(balanced_accuracy_score(y, pred))
        else:
            notes["balanced_accuracy"] = "needs anomalous and normal steps; this population holds one class."
        if n_pos == 0 and int((pred == 1).sum()) == 0:
            notes["f1"] = "no anomalous step and none flagged: precision and recall are both 0/0."
        else:
            f1 = float(f1_score(y, pred, zero_division=0))
    return Summary(n_pos, n_neg, auc, f1, acc, bacc, notes)
