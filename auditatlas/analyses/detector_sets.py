"""The prediction sets the Detectors page compares, and the words and helpers its views share.

A *detector* is a method with its feature set (and, for judges, protocol and model); its
prediction sets are the seeds' replicates. The views over them: the per-action AUROC grid
(``auroc_grid``), the overall comparison and cost beside accuracy (``detector_overall``);
``detector_comparison`` names them all for the pages. No Streamlit here: callers pass ``query``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..stats import spread
from . import Query

ALL_BACKBONES = "(all backbones)"
ALL_ACTIONS = "(all actions)"
THRESHOLD_MODES = ("own", "top_k")
DEFAULT_TOP_K = 10.0
# A paired t-test on two seeds has one degree of freedom: its p-value says more about the
# two draws than about the detector. Below three replicates we say the test is not possible.
MIN_SEEDS_FOR_TEST = 3
ALPHA = 0.05
METRICS = ("auc", "f1", "accuracy", "balanced_accuracy", "silent_recall", "loud_recall")
METRIC_LABELS = {
    "auc": "ROC-AUC", "f1": "F1", "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy",
    "silent_recall": "recall on silent anomalies", "loud_recall": "recall on loud anomalies",
}
SUPERVISION_ORDER = ("unsupervised", "one-class", "semi-supervised", "supervised", "zero-shot", "none")


# ----------------------------------------------------------------------------- small helpers

def check_threshold(mode: str, top_k: float) -> tuple[str, float]:
    """Validate the threshold choice; a user-supplied bad value is an error with one sentence."""
    if mode not in THRESHOLD_MODES:
        raise ValueError(f"threshold must be one of {', '.join(THRESHOLD_MODES)}, not {mode!r}.")
    top_k = float(top_k)
    if not (0 < top_k <= 100):
        raise ValueError(f"top_k must be a percentage in (0, 100], not {top_k:g}.")
    return mode, top_k


def is_random(method: Any, detector_family: Any = None) -> bool:
    """The random baseline: the engine's 'random' detector, or a released set whose method or
    detector family (``prediction_sets.family``) is 'random'."""
    return str(method or "").lower() == "random" or str(detector_family or "").lower() == "random"


def mean_std(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean and sample standard deviation (ddof=1) of the defined values, and how many there are
    (``stats.spread``, as the boards'): NaN when nothing is defined; the std is NaN with a single
    value (no spread to estimate)."""
    found = spread(values)
    return found.mean, found.sd, found.n


def fmt_mean_std(mean: float, std: float, digits: int = 3) -> str:
    if mean is None or not np.isfinite(mean):
        return ""
    if std is None or not np.isfinite(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def span(values: pd.Series) -> str:
    """'12' when every seed rests on the same count, '10–14' when the seeds' test sets differ."""
    return count_span(values.min(), values.max())


def count_span(lo: int, hi: int) -> str:
    """'12' when the lowest and highest count agree, else '10–14'."""
    return f"{int(lo):,}" if lo == hi else f"{int(lo):,}–{int(hi):,}"


# ----------------------------------------------------------------------------- prediction sets

def nothing_to_compare(summary: pd.DataFrame) -> str:
    """Why the slice shows no detector, in one sentence: none of its steps is labeled (a corpus
    of your own traces before a labels file), or no step-level set scores it yet.
    ``summary`` is the ``slice_summary`` query on the slice."""
    if int(summary["labeled_steps"].sum()) == 0:
        return ("No step of this slice carries a label, so no detector can be compared on it; add labels with "
                "`auditatlas ingest labels FILE --corpus NAME`.")
    return ("No step-level prediction set in this slice's corpora. Fit detectors on the [Re-score](/rescore) page, "
            "or import released predictions with `auditatlas ingest predictions FILE`.")


def prediction_sets(query: Query, corpus: str) -> pd.DataFrame:
    """Every prediction set about ``corpus`` with its detector, provenance and whether the
    step-level views can show it (``shown``, or ``not_shown`` with the reason)."""
    sets = query("detector_sets", {"corpus": corpus})
    sets["is_random"] = [is_random(m, f) for m, f in zip(sets["method"], sets["family"])]
    step = sets["granularity"] == "step"
    has_test = sets["n_test_predictions"] > 0
    sets["shown"] = step & has_test
    sets["not_shown"] = np.where(
        ~step, "granularity " + sets["granularity"].fillna("unknown").astype(str) + ": not a step score (see Boards)",
        np.where(~has_test, "no test predictions (split test or all)", ""))
    return sets


def step_sets(sets: pd.DataFrame) -> pd.DataFrame:
    return sets[sets["shown"]].reset_index(drop=True)


def detectors(sets: pd.DataFrame) -> pd.DataFrame:
    """One row per detector: detector family (column ``family``, as stored), supervision,
    source, its sets and seeds."""
    rows = []
    for name, group in sets.groupby("detector", sort=True):
        seeds = sorted(int(s) for s in group["seed"].dropna().unique())
        rows.append({
            "detector": name,
            "method": group["method"].iloc[0],
            "family": _one(group["family"]),
            "supervision": _one(group["supervision"]),
            "origin": _one(group["origin"]),
            "is_random": bool(group["is_random"].any()),
            "n_sets": len(group),
            "seeds": ", ".join(map(str, seeds)) if seeds else "—",
            "set_ids": list(group["set_id"]),
        })
    frame = pd.DataFrame(rows, columns=["detector", "method", "family", "supervision", "origin", "is_random",
                                        "n_sets", "seeds", "set_ids"])
    # Columns in the order a reader compares them: by supervision, then detector family and name; the
    # random baseline last, where the eye ends.
    order = {s: i for i, s in enumerate(SUPERVISION_ORDER)}
    frame["_s"] = frame["supervision"].map(lambda s: order.get(s, len(order)))
    return (frame.sort_values(["is_random", "_s", "family", "detector"]).drop(columns="_s").reset_index(drop=True))


def _one(values: pd.Series) -> str:
    distinct = sorted(str(v) for v in values.dropna().unique())
    if not distinct:
        return "(none)"
    return distinct[0] if len(distinct) == 1 else "mixed: " + ", ".join(distinct)


def random_baseline(dets: pd.DataFrame) -> str | None:
    """The random detector the others are tested against: the one with most seeds."""
    rnd = dets[dets["is_random"]]
    if rnd.empty:
        return None
    return str(rnd.sort_values(["n_sets", "detector"], ascending=[False, True])["detector"].iloc[0])


