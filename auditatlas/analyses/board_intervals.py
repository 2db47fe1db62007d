"""A 95% interval beside every board number a reviewer compares (``BoardRow.intervals``).

Each board says how its intervals are made (``BoardResult.interval_methods``), per metric:

- a run-level ROC-AUC (POST detection, LIVE at each prefix): DeLong's interval of one set
  (``stats.clustered_auc`` with every run its own cluster: runs are independent draws);
- a share of runs (Top-1, Top-3): Clopper-Pearson, exact, over the runs the entrant scores;
  the random floor's per-run hit is a mean over five draws, not a 0/1, so its share gets the
  bootstrap below instead;
- a mean over runs (MRR): a percentile bootstrap over runs (2,000 resamples, seed 0, drawn
  as the paired contrasts draw);
- PRE precision, recall, F1: a configuration-cluster bootstrap (the clusters the PRE contrasts
  resample: a configuration's capabilities are labeled together), 1,000 resamples, seed 0;
  coverage, a share of configurations: Clopper-Pearson. F1 by source: the same bootstrap over
  that source's configurations only.

A seed group's line (``board_seeds``) shows the span of its seeds' intervals, the lowest low to
the highest high, beside the mean ± sd: the seeds score overlapping runs, so an interval of
their mean does not follow from theirs, and averaging their bounds would pretend it does.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import UndefinedMetric
from ..stats import BOOTSTRAP_RESAMPLES, bootstrap_mean_ci, clopper_pearson, cluster_bootstrap_ci, clustered_auc

DELONG = "DeLong (one set; runs independent)"
CLOPPER_PEARSON_RUNS = "Clopper-Pearson over runs (exact); the random floor: bootstrap over runs"
BOOTSTRAP_RUNS = f"percentile bootstrap over runs ({BOOTSTRAP_RESAMPLES:,} resamples, seed 0)"
CLOPPER_PEARSON_CONFIGS = "Clopper-Pearson over configurations (exact)"
SEED_SPAN = "a seed group: the span of its seeds' own intervals (lowest low to highest high), not an interval of the mean"


def auc_interval(y: np.ndarray, score: np.ndarray) -> list[float] | None:
    """DeLong's 95% interval of one run-level ROC-AUC; None where it is undefined."""
    try:
        return list(clustered_auc(y, score).ci95)
    except UndefinedMetric:
        return None


def share_interval(hits: np.ndarray) -> list[float] | None:
    """A share of runs: Clopper-Pearson when every hit is 0 or 1, else (a mean of several
    draws per run) the bootstrap of the mean. NaN entries (runs not scored) are left out."""
    x = np.asarray(hits, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    if np.isin(x, (0.0, 1.0)).all():
        return list(clopper_pearson(int(x.sum()), int(x.size)))
    return mean_interval(x)


def mean_interval(values: np.ndarray) -> list[float] | None:
    """The percentile bootstrap of a mean over runs (NaN entries left out); None when undefined."""
    try:
        return list(bootstrap_mean_ci(values))
    except UndefinedMetric:
        return None


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0: the PRE board's convention for an undefined ratio."""
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


PRE_METRICS = {
    "precision": lambda tp, fp, fn: ratio(tp, tp + fp),
    "recall": lambda tp, fp, fn: ratio(tp, tp + fn),
    "f1": lambda tp, fp, fn: ratio(2 * tp, 2 * tp + fp + fn),
}


def pre_intervals(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, n_scored: int, n_configs: int,
                  n_boot: int, seed: int = 0) -> dict[str, list[float]]:
    """PRE precision, recall and F1 by the configuration-cluster bootstrap of the per-config
    counts; coverage by Clopper-Pearson."""
    out: dict[str, list[float]] = {}
    for metric in PRE_METRICS:
        interval = pre_ratio_interval(metric, tp, fp, fn, n_boot, seed)
        if interval is not None:
            out[metric] = interval
    if n_configs:
        out["coverage"] = list(clopper_pearson(n_scored, n_configs))
    return out


def pre_ratio_interval(metric: str, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, n_boot: int,
                       seed: int = 0) -> list[float] | None:
    """One PRE ratio's configuration-cluster bootstrap interval from per-configuration counts
    (the whole board's configurations, or one source's). A ratio with nothing to divide by
    (flag_none's precision: it flags nothing) gets none: its 0.000 is a convention, not an
    estimate; nor do fewer than two configurations."""
    total = {"precision": tp.sum() + fp.sum(), "recall": tp.sum() + fn.sum(),
             "f1": 2 * tp.sum() + fp.sum() + fn.sum()}[metric]
    if total == 0:
        return None
    try:
        return list(cluster_bootstrap_ci((tp, fp, fn), PRE_METRICS[metric], n_boot=n_boot, seed=seed))
    except UndefinedMetric:
        return None


def span(intervals: Sequence[Sequence[float] | None]) -> list[float] | None:
    """The lowest low and the highest high of the given intervals (None ones left out)."""
    got = [iv for iv in intervals if iv is not None and all(math.isfinite(v) for v in iv)]
    if not got:
        return None
    return [min(iv[0] for iv in got), max(iv[1] for iv in got)]


def fmt_interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """'[0.336, 0.509]'; '' where there is no interval (a bound missing or not finite). The one
    spelling of an interval on the boards, the AUROC grid, their hovers and exports."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def fmt(interval: Sequence[float] | None, digits: int = 3) -> str:
    """``fmt_interval`` of a [low, high] pair; '' without an interval."""
    return fmt_interval(*interval, digits=digits) if interval else ""
