"""Paired statistics behind the boards: which entrant beats which, and how sure we are.

Every entrant on a board scores the same runs (or configs), so every comparison here is
*paired*: the tests condition on the shared items instead of treating two entrants as
independent samples, which would waste most of the evidence. Pure functions on numpy arrays;
no Streamlit, no store.

- ``roc_auc``: ROC-AUC as the Mann-Whitney statistic (ties count one half).
- ``delong_paired``: DeLong et al. (1988) paired test of two ROC-AUCs on the same items.
- ``mcnemar_exact``: exact conditional McNemar for binary hits (Top-1, Top-3).
- ``wilcoxon_paired``: Wilcoxon signed-rank for per-run reciprocal ranks.
- ``paired_bootstrap``: percentile bootstrap of any metric difference, seeded, optionally
  resampling whole clusters; ``paired_sums_bootstrap`` the same for a metric of summed counts,
  all resamples at once (configuration-cluster bootstrap for PRE F1).
- ``clustered_auc`` / ``obuchowski_variance``: one ROC-AUC's 95% interval when items come in
  clusters (Obuchowski 1997; steps clustered by run); DeLong's interval with one item a cluster.
- ``clopper_pearson`` / ``bootstrap_mean_ci`` / ``cluster_bootstrap_ci``: one entrant's 95%
  interval for a proportion (scipy's exact binomial), a mean over runs, a metric over
  resampled clusters (percentile bootstraps, seeded).
- ``holm`` / ``adjust_family`` / ``Contrast``: Holm step-down within a declared family; a
  contrast that does not reject is "unresolved", never "equal" (a failure to reject is not
  evidence of equality).
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from .errors import UndefinedMetric

__all__ = [
    "ALPHA",
    "VERDICTS",
    "BootstrapResult",
    "Contrast",
    "DelongResult",
    "McNemarResult",
    "WilcoxonResult",
    "ClusteredAUC",
    "adjust_family",
    "bootstrap_mean_ci",
    "clopper_pearson",
    "cluster_bootstrap_ci",
    "clustered_auc",
    "obuchowski_variance",
    "delong_paired",
    "holm",
    "mcnemar_exact",
    "paired_bootstrap",
    "paired_sums_bootstrap",
    "roc_auc",
    "wilcoxon_paired",
]

ALPHA = 0.05
# No "equal": not rejecting says the data cannot order the two entrants, nothing more.
VERDICTS = ("separates", "unresolved")

# Pratt keeps tied runs in the ranking; see wilcoxon_paired for why this one.
WILCOXON_ZERO_METHOD = "pratt"

_Z975 = NormalDist().inv_cdf(0.975)


def _sps():
    """scipy.stats, imported on first use: it costs about a second and a half to import, and
    every page imports this module (through the board and view declarations) while few pages
    compute a test (a kept board draws its contrasts without one)."""
    from scipy import stats

    return stats


# ---------------------------------------------------------------------------- input checks

def _binary(values: ArrayLike, name: str) -> np.ndarray:
    """Return a 1-D bool array; refuse anything but 0/1/True/False (a NaN label is a caller bug)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}.")
    if arr.dtype == bool:
        return arr
    if arr.size and not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0/1 (or booleans); drop unlabeled items first.")
    return arr.astype(bool)


def _scores(values: ArrayLike, name: str, n: int) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,):
        raise ValueError(f"{name} has shape {arr.shape}, expected ({n},) to pair with the labels.")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or infinite scores; drop or impute them first.")
    return arr


def _class_counts(y: np.ndarray, what: str) -> tuple[int, int]:
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        # Never 0.5: a one-class slice has no ranking to measure, and 0.5 would read as "random".
        raise UndefinedMetric(
            f"{what} is undefined on this slice: it has {n_pos} positive(s) and {n_neg} "
            "negative(s), and ROC-AUC needs at least one of each."
        )
    return n_pos, n_neg


# ---------------------------------------------------------------------------- ROC-AUC

def roc_auc(y_true: ArrayLike, score: ArrayLike) -> float:
    """ROC-AUC = P(score of a positive > score of a negative), ties counting one half.

    This is the Mann-Whitney U of the positives divided by n_pos * n_neg, computed from
    midranks so ties get half credit exactly. Raises ``UndefinedMetric`` when the slice holds
    a single class instead of returning 0.5, which would masquerade as a random detector.
    """
    y = _binary(y_true, "y_true")
    s = _scores(score, "score", y.size)
    n_pos, n_neg = _class_counts(y, "ROC-AUC")
    ranks = _sps().rankdata(s)  # midranks: tied scores share the mean rank
    u_pos = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u_pos / (n_pos * n_neg))


# ---------------------------------------------------------------------------- DeLong

@dataclass(frozen=True)
class DelongResult:
    """Paired DeLong comparison; ``diff = auc_a - auc_b`` and ``ci95`` is the Wald interval."""

    auc_a: float
    auc_b: float
    diff: float
    se: float
    ci95: tuple[float, float]
    z: float
    p: float
    n_pos: int
    n_neg: int


def _placements(y: np.ndarray, s: np.ndarray, n_pos: int, n_neg: int) -> tuple[np.ndarray, np.ndarray]:
    """DeLong structural components from midranks (no O(n_pos * n_neg) pair loop).

    For a positive x_i: V10_i = (#negatives below x_i + 0.5 #tied) / n_neg, which equals
    (its midrank among all items - its midrank among positives) / n_neg. Symmetrically for a
    negative y_j: V01_j = share of positives above it (ties half) = 1 - (rank_all - rank_neg)/n_pos.
    """
    r_all = _sps().rankdata(s)
    r_pos = _sps().rankdata(s[y])
    r_neg = _sps().rankdata(s[~y])
    v10 = (r_all[y] - r_pos) / n_neg
    v01 = 1.0 - (r_all[~y] - r_neg) / n_pos
    return v10, v01


def delong_paired(y_true: ArrayLike, score_a: ArrayLike, score_b: ArrayLike) -> DelongResult:
    """DeLong, DeLong & Clarke-Pearson (1988) test of AUC_a = AUC_b on the same items.

    Paired because both detectors score the same runs: the covariance of the two AUCs (via the
    per-item placement values) removes the shared difficulty of the items, which an unpaired
    test would count as noise. var(diff) = c' (S10 / n_pos + S01 / n_neg) c with c = (1, -1),
    S10 / S01 the sample covariances (ddof = 1) of the placement values of positives /
    negatives. Two-sided p from the normal approximation. Needs at least two positives and two
    negatives (a covariance from one item is undefined). When the variance is exactly zero the
    result is the formula's limit: p = 1 if the AUCs are equal, else p = 0 (e.g. a perfect
    detector against a constant one).
    """
    y = _binary(y_true, "y_true")
    sa = _scores(score_a, "score_a", y.size)
    sb = _scores(score_b, "score_b", y.size)
    n_pos, n_neg = _class_counts(y, "The DeLong test")
    if n_pos < 2 or n_neg < 2:
        raise UndefinedMetric(
            f"The DeLong test needs at least 2 positives and 2 negatives to estimate a variance; "
            f"this slice has {n_pos} and {n_neg}."
        )
    v10a, v01a = _placements(y, sa, n_pos, n_neg)
    v10b, v01b = _placements(y, sb, n_pos, n_neg)
    auc_a, auc_b = float(v10a.mean()), float(v10b.mean())
    s10 = np.cov(np.vstack([v10a, v10b]), ddof=1)
    s01 = np.cov(np.vstack([v01a, v01b]), ddof=1)
    cov = s10 / n_pos + s01 / n_neg
    var = float(cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    se = math.sqrt(max(var, 0.0))  # round-off can push an identical pair slightly below 0
    diff = auc_a - auc_b
    if se > 1e-15:
        z = diff / se
        p = float(2.0 * _sps().norm.sf(abs(z)))
    elif abs(diff) <= 1e-15:
        z, p = 0.0, 1.0
    else:
        z, p = math.copysign(math.inf, diff), 0.0
    ci = (diff - _Z975 * se, diff + _Z975 * se)
    return DelongResult(auc_a, auc_b, diff, se, ci, float(z), min(p, 1.0), n_pos, n_neg)


# ---------------------------------------------------------------------------- one AUC's interval

@dataclass(frozen=True)
class ClusteredAUC:
    """One ROC-AUC with its clustered standard error and Wald 95% interval (clipped to [0, 1])."""

    auc: float
    se: float
    ci95: tuple[float, float]
    n_pos: int
    n_neg: int
    n_clusters: int


def obuchowski_variance(auc: ArrayLike, n_pos: ArrayLike, n_neg: ArrayLike, q10: ArrayLike, q01: ArrayLike,
                        q11: ArrayLike, i10: ArrayLike, i01: ArrayLike, i: ArrayLike) -> np.ndarray:
    """Var(AUC) for clustered items, Obuchowski (1997, Biometrics 53:567-578), elementwise.

    With clusters i = 1..I (a run), M positives and N negatives in all, m_i / n_i of them in
    cluster i, and DeLong's placement values summed per cluster, V10_i = sum over the cluster's
    positives of (share of all negatives scored below it, ties half) and V01_i = sum over its
    negatives of (share of all positives scored above it, ties half):

        q10 = sum_i (V10_i - m_i AUC)^2,  q01 = sum_i (V01_i - n_i AUC)^2,
        q11 = sum_i (V10_i - m_i AUC)(V01_i - n_i AUC)
        S10 = I10 / ((I10 - 1) M) q10,  S01 = I01 / ((I01 - 1) N) q01,  S11 = I / (I - 1) q11
        Var(AUC) = S10 / M + S01 / N + 2 S11 / (M N)

    where I10 / I01 count the clusters holding a positive / a negative. With one item per
    cluster S11 is 0 and this is DeLong's (1988) variance of one AUC. NaN where it is undefined
    (fewer than two clusters with a positive, or with a negative). Inputs are the sums, so the
    same formula serves ``clustered_auc`` and the grid's SQL (queries/sql/grid_cells.sql).
    """
    auc, m, n = (np.asarray(x, dtype=float) for x in (auc, n_pos, n_neg))
    q10, q01, q11 = (np.asarray(x, dtype=float) for x in (q10, q01, q11))
    i10, i01, i = (np.asarray(x, dtype=float) for x in (i10, i01, i))
    with np.errstate(divide="ignore", invalid="ignore"):
        s10 = i10 / ((i10 - 1) * m) * q10
        s01 = i01 / ((i01 - 1) * n) * q01
        s11 = i / (i - 1) * q11
        var = s10 / m + s01 / n + 2 * s11 / (m * n)
    ok = (i10 >= 2) & (i01 >= 2) & (m > 0) & (n > 0) & np.isfinite(auc)
    return np.where(ok, np.maximum(var, 0.0), np.nan)  # round-off can dip a zero variance below 0


def wald_interval(estimate: ArrayLike, se: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """estimate +- 1.96 se, clipped to [0, 1] (a ROC-AUC or a share cannot leave it)."""
    est, se = np.asarray(estimate, dtype=float), np.asarray(se, dtype=float)
    return np.clip(est - _Z975 * se, 0.0, 1.0), np.clip(est + _Z975 * se, 0.0, 1.0)


def clustered_auc(y_true: ArrayLike, score: ArrayLike, clusters: ArrayLike | None = None) -> ClusteredAUC:
    """ROC-AUC with a 95% interval that treats items of one cluster as dependent (Obuchowski 1997).

    Steps of one run are not independent (one backbone, one task, one failing chain), so a
    step-level AUC's DeLong interval, which counts every step as a fresh draw, is too narrow;
    this one resamples, in effect, whole runs. ``clusters`` None: every item its own cluster,
    which is DeLong's interval for one set. The variance is ``obuchowski_variance`` on the
    per-cluster sums of DeLong's placement values (``_placements``); the interval is Wald's,
    clipped to [0, 1]. Raises ``UndefinedMetric`` with one class, or when fewer than two
    clusters hold a positive or a negative (no spread to estimate).
    """
    y = _binary(y_true, "y_true")
    s = _scores(score, "score", y.size)
    n_pos, n_neg = _class_counts(y, "ROC-AUC")
    labels = np.arange(y.size) if clusters is None else np.asarray(clusters)
    if labels.shape != (y.size,):
        raise ValueError(f"clusters has shape {labels.shape}, expected ({y.size},): one label per item.")
    _, codes = np.unique(labels, return_inverse=True)
    k = int(codes.max()) + 1
    v10, v01 = _placements(y, s, n_pos, n_neg)
    auc = float(v10.mean())
    m_i = np.bincount(codes[y], minlength=k).astype(float)
    n_i = np.bincount(codes[~y], minlength=k).astype(float)
    d10 = np.bincount(codes[y], weights=v10, minlength=k) - m_i * auc
    d01 = np.bincount(codes[~y], weights=v01, minlength=k) - n_i * auc
    i10, i01 = int((m_i > 0).sum()), int((n_i > 0).sum())
    if i10 < 2 or i01 < 2:
        raise UndefinedMetric(f"A clustered ROC-AUC interval needs at least 2 clusters with a positive and 2 with a "
                              f"negative; this slice has {i10} and {i01}.")
    var = float(obuchowski_variance(auc, n_pos, n_neg, (d10 ** 2).sum(), (d01 ** 2).sum(), (d10 * d01).sum(),
                                    i10, i01, k))
    se = math.sqrt(var)
    low, high = wald_interval(auc, se)
    return ClusteredAUC(auc, se, (float(low), float(high)), n_pos, n_neg, k)


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion: scipy.stats.binomtest's proportion_ci.

    Exact rather than Wald because board proportions sit near 0 or 1 (Top-1 of a weak judge,
    coverage of a full scanner), where a normal interval leaves [0, 1] or collapses to a point.
    """
    if trials <= 0:
        raise UndefinedMetric("A proportion's interval needs at least one item.")
    ci = _sps().binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


BOOTSTRAP_RESAMPLES = 2000


def bootstrap_mean_ci(values: ArrayLike, n_boot: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% interval of a mean over items (the items are runs, resampled whole).

    Percentile, as the boards' paired contrasts are, and drawn as they draw
    (``paired_mean_bootstrap``: one ``default_rng(seed).integers(0, n, size=n)`` per resample,
    the draws kept per size), so an entrant's interval and its contrasts rest on the same
    resamples. scipy.stats.bootstrap gives the same kind of interval but took 20 ms a call,
    and a localization board asks for some 170 of them.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        raise UndefinedMetric("A bootstrap interval needs at least two items.")
    means = _resample_means([x], n_boot, seed, 256)[0]
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def cluster_bootstrap_ci(counts: Sequence[ArrayLike], metric: Callable[..., np.ndarray],
                         n_boot: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% interval of a metric of summed per-cluster counts, clusters resampled whole.

    ``counts`` holds one array per count (e.g. true positives, false positives, false negatives
    per configuration); ``metric`` maps their resampled sums (arrays, one value per resample)
    to the metric. Seeded with ``numpy.random.default_rng(seed)``: k cluster indices per
    resample, drawn at once, so a board's interval is the same on every run.
    """
    stacked = np.vstack([np.asarray(c, dtype=float) for c in counts])
    k = stacked.shape[1]
    if k < 2:
        raise UndefinedMetric("A cluster bootstrap interval needs at least two clusters.")
    # A resample's sum of a count is (times each cluster was drawn) @ count: one matrix
    # product for every count and resample. The draw counts are kept: a board asks for the
    # same k, n_boot and seed for every entrant and metric.
    sums = stacked @ _cluster_draw_counts(k, n_boot, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(metric(*sums), dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise UndefinedMetric(f"The metric was undefined on all {n_boot} bootstrap resamples.")
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)


# Eight: the PRE board asks for its whole k and each source's k (six published sources) in
# turn for every entrant; at most ~10 MB each (1,187 configurations x 1,000 resamples).
@lru_cache(maxsize=8)
def _cluster_draw_counts(k: int, n_boot: int, seed: int) -> np.ndarray:
    """(k, n_boot): how many times each of k clusters is drawn in each resample."""
    draws = np.random.default_rng(seed).integers(0, k, size=(n_boot, k))
    flat = (draws + (np.arange(n_boot) * k)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n_boot * k).reshape(n_boot, k).T.astype(float)
    counts.setflags(write=False)  # shared between calls: nobody may change it
    return counts


# ---------------------------------------------------------------------------- McNemar

@dataclass(frozen=True)
class McNemarResult:
    """``n01``: items A missed and B hit; ``n10``: A hit and B missed."""

    n01: int
    n10: int
    n: int
    rate_a: float
    rate_b: float
    p: float


def mcnemar_exact(hits_a: ArrayLike, hits_b: ArrayLike) -> McNemarResult:
    """Exact conditional McNemar test for paired binary hits (Top-1 / Top-3 per run).

    Only the discordant runs carry information about which entrant is better; under H0 each
    discordant run is equally likely to favour A or B, so n10 ~ Binomial(n01 + n10, 1/2). The
    exact binomial (scipy.stats.binomtest, two-sided) is used rather than the chi-square
    approximation because discordant counts on these boards are often small (tens), where the
    approximation is anti-conservative. No discordant runs: nothing separates them, p = 1.
    """
    a = _binary(hits_a, "hits_a")
    b = _binary(hits_b, "hits_b")
    if a.shape != b.shape:
        raise ValueError(f"hits_a and hits_b must pair item by item, got {a.size} and {b.size}.")
    if a.size == 0:
        raise UndefinedMetric("McNemar's test is undefined on an empty slice.")
    n01 = int((~a & b).sum())
    n10 = int((a & ~b).sum())
    k = n01 + n10
    p = 1.0 if k == 0 else float(_sps().binomtest(n10, k, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(n01, n10, int(a.size), float(a.mean()), float(b.mean()), min(p, 1.0))


# ---------------------------------------------------------------------------- Wilcoxon

@dataclass(frozen=True)
class WilcoxonResult:
    """``statistic``: scipy's two-sided statistic (smaller of the signed-rank sums)."""

    statistic: float
    p: float
    n: int
    n_zero: int
    mean_a: float
    mean_b: float


def wilcoxon_paired(x_a: ArrayLike, x_b: ArrayLike) -> WilcoxonResult:
    """Wilcoxon signed-rank test of per-run reciprocal ranks (scipy.stats.wilcoxon).

    zero_method="pratt": with reciprocal ranks most runs tie (both entrants put the mistake
    step at the same rank), so zero differences are the norm. The scipy default "wilcox" drops
    them and tests as if only the untied runs existed, overstating the evidence; "zsplit"
    hands half of each tie to each direction. Pratt (1959) keeps the tied runs in the ranking
    (so the sample size and rank scale stay those of the board) and then gives their ranks to
    neither side, with the normal approximation adjusted for them; scipy notes it is the more
    conservative choice. p-values come from scipy's method="auto" (exhaustive sign flips for
    up to 13 runs when there are ties/zeros, normal approximation with tie correction beyond).
    All differences zero: the entrants are indistinguishable on these runs, p = 1.
    """
    a = _scores(x_a, "x_a", np.asarray(x_a).size)
    b = _scores(x_b, "x_b", a.size)
    if a.size == 0:
        raise UndefinedMetric("The Wilcoxon test is undefined on an empty slice.")
    d = a - b
    n_zero = int((d == 0).sum())
    if n_zero == d.size:
        return WilcoxonResult(0.0, 1.0, int(d.size), n_zero, float(a.mean()), float(b.mean()))
    res = _sps().wilcoxon(a, b, zero_method=WILCOXON_ZERO_METHOD, alternative="two-sided")
    return WilcoxonResult(
        float(res.statistic), min(float(res.pvalue), 1.0), int(d.size), n_zero,
        float(a.mean()), float(b.mean()),
    )


# ---------------------------------------------------------------------------- bootstrap

@dataclass(frozen=True)
class BootstrapResult:
    """Percentile bootstrap of ``diff = estimate_a - estimate_b`` (point values on all items)."""

    estimate_a: float
    estimate_b: float
    diff: float
    ci95: tuple[float, float]
    p: float
    n_boot: int
    n_dropped: int
    n_units: int  # items, or clusters when resampling clusters


def _cluster_index(clusters: ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items grouped by cluster: (item order, start of each cluster in it, cluster sizes)."""
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise ValueError(f"clusters has shape {labels.shape}, expected ({n},): one label per item.")
    _, codes = np.unique(labels, return_inverse=True)
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.cumsum(sizes) - sizes
    return order, starts, sizes


def _cluster_draw(rng: np.random.Generator, order: np.ndarray, starts: np.ndarray,
                  sizes: np.ndarray) -> np.ndarray:
    """Item indices of k clusters drawn with replacement, each cluster kept whole."""
    draw = rng.integers(0, sizes.size, size=sizes.size)
    sz = sizes[draw]
    offsets = np.cumsum(sz) - sz
    within = np.arange(int(sz.sum())) - np.repeat(offsets, sz)
    return order[np.repeat(starts[draw], sz) + within]


def _pair(metric_fn: Callable[..., tuple[float, float]], arrays: Sequence[np.ndarray],
          idx: np.ndarray | None) -> tuple[float, float]:
    picked = arrays if idx is None else [arr[idx] for arr in arrays]
    value_a, value_b = metric_fn(*picked)
    return float(value_a), float(value_b)


def paired_bootstrap(
    metric_fn: Callable[..., tuple[float, float]],
    *arrays: ArrayLike,
    n_boot: int = 2000,
    seed: int = 0,
    clusters: ArrayLike | None = None,
) -> BootstrapResult:
    """Paired percentile bootstrap of metric(A) - metric(B) over shared items.

    ``metric_fn(*arrays)`` returns ``(value_a, value_b)``; every array is resampled with the
    same item indices (axis 0) so A and B always see the same runs: that is what makes it
    paired. With ``clusters`` (one label per item) whole clusters are resampled instead: for
    PRE F1 an item is a (config, capability) pair and a cluster is a config, whose capabilities
    are labeled together and are not independent. Seeded with numpy.random.default_rng(seed),
    so a board is reproducible.

    ci95 is the 2.5/97.5 percentile interval of the bootstrap differences. p is two-sided,
    read off the same distribution (twice the smaller tail mass at 0, each tail counted with
    the +1 of Davison & Hinkley so a finite bootstrap never claims p = 0), hence consistent
    with the interval. A resample on which the metric is undefined (``UndefinedMetric`` or a
    non-finite value, e.g. an AUC slice with one class) is dropped and counted in n_dropped.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}.")
    if not arrays:
        raise ValueError("paired_bootstrap needs at least one array to resample.")
    arrs = [np.asarray(a) for a in arrays]
    n = arrs[0].shape[0] if arrs[0].ndim else 0
    if n == 0 or any(a.ndim == 0 or a.shape[0] != n for a in arrs):
        raise ValueError("paired_bootstrap needs non-empty arrays of equal length (items on axis 0).")

    est_a, est_b = _pair(metric_fn, arrs, None)
    rng = np.random.default_rng(seed)
    grouping = _cluster_index(clusters, n) if clusters is not None else None
    diffs = np.empty(n_boot)
    kept = 0
    for _ in range(n_boot):
        idx = _cluster_draw(rng, *grouping) if grouping else rng.integers(0, n, size=n)
        try:
            va, vb = _pair(metric_fn, arrs, idx)
        except UndefinedMetric:
            continue
        if math.isfinite(va) and math.isfinite(vb):
            diffs[kept] = va - vb
            kept += 1
    n_units = int(grouping[2].size) if grouping else n
    return _bootstrap_result(est_a, est_b, diffs[:kept], n_boot, n_units)


def _bootstrap_result(est_a: float, est_b: float, diffs: np.ndarray, n_boot: int, n_units: int) -> BootstrapResult:
    """The percentile interval and two-sided p of the kept bootstrap differences."""
    kept = int(diffs.size)
    if kept == 0:
        raise UndefinedMetric(f"The metric was undefined on all {n_boot} bootstrap resamples.")
    low, high = np.quantile(diffs, [0.025, 0.975])
    tail_low = (np.count_nonzero(diffs <= 0) + 1) / (kept + 1)
    tail_high = (np.count_nonzero(diffs >= 0) + 1) / (kept + 1)
    p = min(1.0, 2.0 * min(tail_low, tail_high))
    return BootstrapResult(est_a, est_b, est_a - est_b, (float(low), float(high)), float(p),
                           kept, n_boot - kept, n_units)


def paired_mean_bootstrap(a: ArrayLike, b: ArrayLike, n_boot: int = 2000, seed: int = 0,
                          block: int = 64) -> BootstrapResult:
    """``paired_bootstrap`` of (mean(a), mean(b)), with the resamples' means taken ``block`` at a time.

    The same generator draws the same item indices in the same order as
    ``paired_bootstrap(lambda x, y: (np.mean(x), np.mean(y)), a, b, n_boot=n_boot, seed=seed)``,
    and each resample's mean is the same numpy reduction over the same values, so the result
    is the same; only the per-resample Python calls are gone (a localization board contrasts
    every prediction set three times: 2,000 resamples each took most of its time). ``block``
    bounds the memory to ``block`` x n values per array.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}.")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError("paired_mean_bootstrap needs two non-empty 1-d arrays of equal length.")
    n = a.size
    means_a, means_b = _resample_means([a, b], n_boot, seed, block)
    diffs = means_a - means_b
    diffs = diffs[np.isfinite(diffs)]
    return _bootstrap_result(float(np.mean(a)), float(np.mean(b)), diffs, n_boot, n)


def paired_sums_bootstrap(counts_a: Sequence[ArrayLike], counts_b: Sequence[ArrayLike],
                          metric: Callable[..., np.ndarray], n_boot: int = 2000, seed: int = 0) -> BootstrapResult:
    """``paired_bootstrap`` of (metric of A's summed counts, metric of B's) over shared items,
    every resample at once.

    ``counts_a``/``counts_b``: one array per count, one value per item (e.g. true positives,
    false positives, false negatives per configuration); ``metric`` maps arrays of summed counts
    (one value per resample) to the metric's values. The item indices are the ones
    ``paired_bootstrap`` draws (one ``integers(0, n, size=n)`` per resample, kept for reuse), and a
    sum of whole-number counts is exact in any order, so the result is the same; only the
    per-resample Python calls are gone (the PRE board's contrasts spent most of their time in them).
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}.")
    a = [np.asarray(c, dtype=float) for c in counts_a]
    b = [np.asarray(c, dtype=float) for c in counts_b]
    n = a[0].size if a and a[0].ndim == 1 else 0
    if n == 0 or len(a) != len(b) or any(c.shape != (n,) for c in a + b):
        raise ValueError("paired_sums_bootstrap needs the same number of non-empty 1-d counts of one length for A and B.")
    with np.errstate(divide="ignore", invalid="ignore"):
        est_a = float(metric(*(np.array([c.sum()]) for c in a))[0])
        est_b = float(metric(*(np.array([c.sum()]) for c in b))[0])
        sums = np.concatenate([np.stack([c[idx].sum(axis=1) for c in a + b])
                               for idx in _resample_blocks(n, n_boot, seed, _block(n, n_boot))], axis=1)
        values_a = np.asarray(metric(*sums[:len(a)]), dtype=float)
        values_b = np.asarray(metric(*sums[len(a):]), dtype=float)
    finite = np.isfinite(values_a) & np.isfinite(values_b)
    return _bootstrap_result(est_a, est_b, (values_a - values_b)[finite], n_boot, n)


# The resample means ``shared_resamples`` computed, by (n, n_boot, seed, the values' digest);
# None outside it. A context variable: the app's sessions compute boards on threads of their own.
_SHARED: ContextVar[dict[tuple, np.ndarray] | None] = ContextVar("shared_resample_means", default=None)


@contextmanager
def shared_resamples(vectors: Sequence[np.ndarray], n_boot: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Iterator[None]:
    """Within the block, a bootstrap of the mean of one of ``vectors`` (``bootstrap_mean_ci``,
    ``paired_mean_bootstrap``) reads its resample means from one pass over the draws made here
    for every vector of a length at once. A board bootstraps many entrants' values over the
    same runs with the same seed, and above ``_KEEP_DRAWS`` each call drew its 2,000 resamples
    again (POST localization at a million rooms: most of its time). The draws and each mean
    are the ones a single call takes: the same numbers."""
    shared: dict[tuple, np.ndarray] = {}
    by_size: dict[int, dict[tuple, np.ndarray]] = {}
    for v in vectors:
        x = np.ascontiguousarray(v, dtype=float)
        by_size.setdefault(x.size, {})[_digest(x, n_boot, seed)] = x
    for n, group in by_size.items():
        if n:
            shared.update(zip(group, _draw_means(list(group.values()), n_boot, seed, 256)))
    token = _SHARED.set(shared)
    try:
        yield
    finally:
        _SHARED.reset(token)


def _digest(x: np.ndarray, n_boot: int, seed: int) -> tuple:
    return (x.size, n_boot, seed, hashlib.blake2b(x.tobytes(), digest_size=16).digest())


def _resample_means(vectors: list[np.ndarray], n_boot: int, seed: int, block: int) -> list[np.ndarray]:
    """Each vector's mean in each of ``n_boot`` resamples of its items (vectors of one length,
    resampled together): kept by ``shared_resamples``, else drawn here once for all of them."""
    vectors = [np.ascontiguousarray(v, dtype=float) for v in vectors]
    shared = _SHARED.get()
    kept = [shared.get(_digest(v, n_boot, seed)) if shared is not None else None for v in vectors]
    if all(k is not None for k in kept):
        return [k.copy() for k in kept]
    return list(_draw_means(vectors, n_boot, seed, block))


def _draw_means(vectors: list[np.ndarray], n_boot: int, seed: int, block: int) -> np.ndarray:
    """(vectors, resamples) means, the draws (``_resample_blocks``) made once for all vectors;
    each mean is ``x[idx].mean(axis=1)``, the reduction a vector alone takes."""
    n = vectors[0].size
    means = np.empty((len(vectors), n_boot))
    start = 0
    for idx in _resample_blocks(n, n_boot, seed, _block(n, block)):
        for j, x in enumerate(vectors):
            means[j, start:start + idx.shape[0]] = x[idx].mean(axis=1)
        start += idx.shape[0]
    return means


# Resample indices are kept for reuse (eight sets at most, each up to this many values, 16 MB):
# a board contrasts many entrants on the same number of items with the same seed (a detector
# panel's sets share their seed's test split), so they share one set of draws, and drawing
# them (one generator call per resample) costs more than the means themselves.
_KEEP_DRAWS = 2_000_000


# Resampled values held at once by a bootstrap of means (32 MB of float64): the means of a
# block of resamples are taken together, and a block of 256 resamples of 695,454 runs (POST
# localization at a million rooms) was 1.4 GB of indices and as much again of values.
_BLOCK_VALUES = 4_000_000


def _block(n: int, block: int) -> int:
    """``block`` resamples of ``n`` items at a time, fewer where that would hold more than
    ``_BLOCK_VALUES`` values (the draws and their means are the same whatever the block)."""
    return max(1, min(block, _BLOCK_VALUES // max(n, 1)))


def _resample_blocks(n: int, n_boot: int, seed: int, block: int) -> Iterator[np.ndarray]:
    """The item indices of ``n_boot`` resamples of ``n`` items, ``block`` resamples at a time,
    drawn as ``paired_bootstrap`` draws them (one ``integers(0, n, size=n)`` per resample)."""
    if n * n_boot <= _KEEP_DRAWS:
        draws = _kept_draws(n, n_boot, seed)
        for start in range(0, n_boot, block):
            yield draws[start:start + block]
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, block):
        yield np.stack([rng.integers(0, n, size=n) for _ in range(min(block, n_boot - start))])


@lru_cache(maxsize=8)
def _kept_draws(n: int, n_boot: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    draws = np.stack([rng.integers(0, n, size=n) for _ in range(n_boot)])
    draws.setflags(write=False)  # shared between calls: nobody may change it
    return draws


# ---------------------------------------------------------------------------- Holm

def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values, in the input order.

    Sorted ascending, p_(i) is multiplied by (m - i + 1); a running maximum keeps the adjusted
    values monotone (a smaller raw p never gets a larger adjusted p), and values are capped at
    1. Controls the family-wise error rate under any dependence, which matters because every
    contrast on a board reuses the same runs. Reject H_i at level alpha iff adjusted p_i < alpha.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be one-dimensional, got shape {p.shape}.")
    if not np.isfinite(p).all() or ((p < 0) | (p > 1)).any():
        raise ValueError("pvalues must be finite numbers in [0, 1].")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


# ---------------------------------------------------------------------------- contrasts

@dataclass(frozen=True)
class Contrast:
    """One paired comparison of entrant A against entrant B within a declared family.

    ``diff = a_value - b_value``; ``ci_low``/``ci_high`` bound it (NaN when the test gives no
    interval). ``p_adj`` and ``verdict`` are filled by ``adjust_family``.
    """

    family: str
    a_name: str
    b_name: str
    a_value: float
    b_value: float
    diff: float
    ci_low: float
    ci_high: float
    p: float
    test: str
    p_adj: float | None = None
    verdict: str | None = None


def adjust_family(contrasts: Sequence[Contrast], alpha: float = ALPHA) -> list[Contrast]:
    """Holm-adjust p within each family and set verdicts; returns new contrasts in input order.

    Families are adjusted separately because each is a separate declared question (e.g. "which
    POST judges beat the position baseline on Top-1"). verdict = "separates" when p_adj < alpha,
    else "unresolved". A contrast whose p is None/NaN (its test could not be run on this slice)
    is not a test: it gets p_adj = NaN, verdict "unresolved", and does not enlarge its family.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}.")
    adjusted: dict[int, float] = {}
    families: dict[str, list[int]] = {}
    for i, c in enumerate(contrasts):
        if c.p is not None and math.isfinite(c.p):
            families.setdefault(c.family, []).append(i)
    for members in families.values():
        for i, q in zip(members, holm([contrasts[i].p for i in members])):
            adjusted[i] = float(q)
    out = []
    for i, c in enumerate(contrasts):
        q = adjusted.get(i, math.nan)
        verdict = VERDICTS[0] if q < alpha else VERDICTS[1]  # NaN < alpha is False
        out.append(replace(c, p_adj=q, verdict=verdict))
    return out


# ------------------------------------------------------------------------------ spread over seeds

# The standard deviation over seeds is the sample one: the seeds are a sample of the seeds a
# reviewer could have drawn, and the spread estimates how much a result moves with the seed.
SD_DDOF = 1


@dataclass(frozen=True)
class Spread:
    """A metric over one detector's seeds: mean, sample standard deviation, min, max, count."""

    mean: float
    sd: float  # NaN with one defined seed: no spread to estimate
    low: float
    high: float
    n: int

    def text(self, digits: int = 3, with_range: bool = True) -> str:
        """'0.452 ± 0.012 (0.440–0.470)' (without the range: '0.452 ± 0.012'); the mean alone
        with a single seed; '' when no seed is defined."""
        if self.n == 0:
            return ""
        mean = f"{self.mean:.{digits}f}"
        if self.n == 1 or not math.isfinite(self.sd):
            return mean
        return f"{mean} ± {self.sd:.{digits}f}" + (f" ({self.range_text(digits)})" if with_range else "")

    def range_text(self, digits: int = 3) -> str:
        """'0.440–0.470'; '' when no seed is defined."""
        return "" if self.n == 0 else f"{self.low:.{digits}f}–{self.high:.{digits}f}"


def spread(values: Sequence[float | None]) -> Spread:
    """The spread of the defined (finite) values; seeds whose metric is undefined are left out."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return Spread(math.nan, math.nan, math.nan, math.nan, 0)
    sd = float(np.std(arr, ddof=SD_DDOF)) if arr.size > SD_DDOF else math.nan
    return Spread(float(arr.mean()), sd, float(arr.min()), float(arr.max()), int(arr.size))
