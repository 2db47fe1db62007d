"""Tests for auditatlas.stats.

Every expected value comes from scipy/sklearn, a hand computation, or a brute-force reference
written here from the definition (never from the function under test).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

from auditatlas.errors import UndefinedMetric
from auditatlas.stats import (
    Contrast,
    adjust_family,
    delong_paired,
    holm,
    mcnemar_exact,
    paired_bootstrap,
    roc_auc,
    wilcoxon_paired,
)

# ---------------------------------------------------------------------------- references

def _psi(x: float, y: float) -> float:
    """Mann-Whitney kernel: positive above negative 1, tie 1/2."""
    return 1.0 if x > y else 0.5 if x == y else 0.0


def _brute_delong(y, sa, sb):
    """DeLong 1988 from the definition: O(n^2) placements, explicit covariance sums."""
    pos = [i for i in range(len(y)) if y[i] == 1]
    neg = [j for j in range(len(y)) if y[j] == 0]
    m, n = len(pos), len(neg)

    def components(s):
        v10 = [sum(_psi(s[i], s[j]) for j in neg) / n for i in pos]
        v01 = [sum(_psi(s[i], s[j]) for i in pos) / m for j in neg]
        return v10, v01

    v10a, v01a = components(sa)
    v10b, v01b = components(sb)
    auc_a, auc_b = sum(v10a) / m, sum(v10b) / m

    def cov(u, v):
        mu, mv = sum(u) / len(u), sum(v) / len(v)
        return sum((a - mu) * (b - mv) for a, b in zip(u, v)) / (len(u) - 1)

    var = (cov(v10a, v10a) + cov(v10b, v10b) - 2 * cov(v10a, v10b)) / m + (
        cov(v01a, v01a) + cov(v01b, v01b) - 2 * cov(v01a, v01b)
    ) / n
    se = math.sqrt(var)
    z = (auc_a - auc_b) / se
    p = math.erfc(abs(z) / math.sqrt(2))  # two-sided normal tail
    return auc_a, auc_b, se, z, p


def _brute_binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial(n, 1/2) p: mass of outcomes no likelier than k."""
    pmf = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(q for q in pmf if q <= pmf[k] * (1 + 1e-9)))


def _brute_signflip_p(d) -> float:
    """Exact sign-flip p of the Pratt signed-rank statistic over every sign assignment."""
    d = np.asarray(d, dtype=float)
    ranks = sps.rankdata(np.abs(d))  # zeros take part in the ranking (Pratt)...
    nz = d != 0
    r = ranks[nz]  # ...and then give their ranks to neither side
    t_obs = r[d[nz] > 0].sum()
    mu = r.sum() / 2
    hits = 0
    total = 0
    for signs in itertools.product((0, 1), repeat=r.size):
        t = float(np.dot(signs, r))
        hits += abs(t - mu) >= abs(t_obs - mu) - 1e-9
        total += 1
    return hits / total


def _pratt_normal_p(d) -> float:
    """Normal approximation of the Pratt signed-rank test (Cureton 1967), tie-corrected."""
    d = np.asarray(d, dtype=float)
    n = d.size
    n0 = int((d == 0).sum())
    ranks = sps.rankdata(np.abs(d))
    t_plus = ranks[d > 0].sum()
    mean = (n * (n + 1) - n0 * (n0 + 1)) / 4
    var = (n * (n + 1) * (2 * n + 1) - n0 * (n0 + 1) * (2 * n0 + 1)) / 24
    _, counts = np.unique(np.abs(d[d != 0]), return_counts=True)
    var -= (counts**3 - counts).sum() / 48
    z = (t_plus - mean) / math.sqrt(var)
    return math.erfc(abs(z) / math.sqrt(2))


def _brute_holm(p) -> list[float]:
    """Holm = closed testing with Bonferroni local tests: max over every superset containing i."""
    m = len(p)
    out = []
    for i in range(m):
        others = [j for j in range(m) if j != i]
        worst = 0.0
        for size in range(m):
            for extra in itertools.combinations(others, size):
                s = (i, *extra)
                worst = max(worst, min(1.0, len(s) * min(p[j] for j in s)))
        out.append(worst)
    return out


# ---------------------------------------------------------------------------- roc_auc

def test_roc_auc_hand_examples_with_ties_counting_half():
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    assert roc_auc([0, 1], [0.5, 0.5]) == pytest.approx(0.5)
    # positive tied with one negative (1/2) and above the other (1): (1 + 0.5) / 2
    assert roc_auc([0, 0, 1], [1.0, 2.0, 2.0]) == pytest.approx(0.75)
    assert roc_auc([True, False, True], [3, 1, 2]) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_roc_auc_matches_sklearn_and_mann_whitney(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.normal(size=300) + 0.7 * y, 1)  # rounding forces many ties
    expected = roc_auc_score(y, s)
    u = sps.mannwhitneyu(s[y == 1], s[y == 0]).statistic
    assert roc_auc(y, s) == pytest.approx(expected, abs=1e-12)
    assert roc_auc(y, s) == pytest.approx(u / ((y == 1).sum() * (y == 0).sum()), abs=1e-12)


def test_roc_auc_one_class_raises_instead_of_half():
    with pytest.raises(UndefinedMetric, match="0 negative"):
        roc_auc([1, 1, 1], [0.2, 0.3, 0.4])
    with pytest.raises(UndefinedMetric, match="0 positive"):
        roc_auc([0, 0], [0.2, 0.3])


def test_roc_auc_refuses_bad_input():
    with pytest.raises(ValueError, match="0/1"):
        roc_auc([0, 2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="NaN"):
        roc_auc([0, 1, 1], [0.1, float("nan"), 0.3])
    with pytest.raises(ValueError, match="shape"):
        roc_auc([0, 1, 1], [0.1, 0.2])


# ---------------------------------------------------------------------------- DeLong

@pytest.mark.parametrize("seed", range(4))
def test_delong_matches_brute_force_definition(seed):
    rng = np.random.default_rng(100 + seed)
    n = 60
    y = rng.integers(0, 2, n)
    y[:2], y[2:4] = 1, 0  # at least two of each
    sa = np.round(rng.normal(size=n) + 1.0 * y, 1)
    sb = np.round(0.6 * sa + rng.normal(size=n) + 0.3 * y, 1)  # correlated with A, ties
    auc_a, auc_b, se, z, p = _brute_delong(y.tolist(), sa.tolist(), sb.tolist())
    r = delong_paired(y, sa, sb)
    assert r.auc_a == pytest.approx(auc_a, abs=1e-12)
    assert r.auc_b == pytest.approx(auc_b, abs=1e-12)
    assert r.auc_a == pytest.approx(roc_auc_score(y, sa), abs=1e-12)
    assert r.auc_b == pytest.approx(roc_auc_score(y, sb), abs=1e-12)
    assert r.diff == pytest.approx(auc_a - auc_b, abs=1e-12)
    assert r.se == pytest.approx(se, rel=1e-9)
    assert r.z == pytest.approx(z, rel=1e-9)
    assert r.p == pytest.approx(p, rel=1e-7, abs=1e-15)
    assert r.ci95[0] == pytest.approx(auc_a - auc_b - 1.959963984540054 * se, abs=1e-9)
    assert r.ci95[1] == pytest.approx(auc_a - auc_b + 1.959963984540054 * se, abs=1e-9)
    assert (r.n_pos, r.n_neg) == (int(y.sum()), int(n - y.sum()))


def test_delong_identical_scores_give_p_one():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 80)
    s = rng.normal(size=80) + y
    r = delong_paired(y, s, s.copy())
    assert r.diff == 0.0 and r.se == 0.0 and r.z == 0.0
    assert r.p == 1.0
    # a monotone transform leaves every placement value, hence the AUC, unchanged
    r2 = delong_paired(y, s, np.exp(s))
    assert r2.diff == pytest.approx(0.0, abs=1e-12) and r2.p == 1.0


def test_delong_p_is_roughly_uniform_under_the_null():
    # Two exchangeable detectors: equal true AUC, so about 5% of p-values fall below 0.05.
    rng = np.random.default_rng(2024)
    ps = []
    for _ in range(300):
        y = rng.integers(0, 2, 120)
        base = 0.8 * y + rng.normal(size=120)
        ps.append(delong_paired(y, base + rng.normal(size=120), base + rng.normal(size=120)).p)
    ps = np.array(ps)
    assert 0.01 <= (ps < 0.05).mean() <= 0.10
    assert 0.35 <= np.median(ps) <= 0.65


def test_delong_detects_a_clear_difference():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    good = 2.5 * y + rng.normal(size=200)
    noise = rng.normal(size=200)
    r = delong_paired(y, good, noise)
    assert r.diff > 0.3 and r.p < 1e-6 and r.ci95[0] > 0


def test_delong_se_agrees_with_paired_bootstrap():
    # The spec cross-checks DeLong with a paired bootstrap: bootstrap CI width / (2 * 1.96)
    # estimates the same standard error.
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 300)
    sa = 1.0 * y + rng.normal(size=300)
    sb = 0.5 * y + 0.5 * sa + rng.normal(size=300)
    r = delong_paired(y, sa, sb)
    boot = paired_bootstrap(lambda yy, a, b: (roc_auc(yy, a), roc_auc(yy, b)), y, sa, sb,
                            n_boot=1000, seed=1)
    boot_se = (boot.ci95[1] - boot.ci95[0]) / (2 * 1.959963984540054)
    assert boot_se == pytest.approx(r.se, rel=0.2)
    assert boot.diff == pytest.approx(r.diff, abs=1e-12)


def test_delong_needs_two_of_each_class():
    with pytest.raises(UndefinedMetric, match="at least 2 positives"):
        delong_paired([1, 0, 0, 0], [0.9, 0.1, 0.2, 0.3], [0.5, 0.4, 0.3, 0.2])
    with pytest.raises(UndefinedMetric, match="positive"):
        delong_paired([0, 0, 0], [0.1, 0.2, 0.3], [0.1, 0.2, 0.3])


def test_delong_zero_variance_with_unequal_auc_is_p_zero():
    # A perfect detector against a constant one: every placement is constant, so var = 0.
    y = [0, 0, 1, 1]
    r = delong_paired(y, [0.1, 0.2, 0.8, 0.9], [0.5, 0.5, 0.5, 0.5])
    assert (r.auc_a, r.auc_b, r.se, r.p) == (1.0, 0.5, 0.0, 0.0)
    assert r.z == math.inf


# ---------------------------------------------------------------------------- McNemar

def test_mcnemar_hand_example():
    # 6 runs only A hits, 1 run only B hits, plus concordant runs that carry no information.
    a = [1] * 6 + [0] + [1] * 10 + [0] * 5
    b = [0] * 6 + [1] + [1] * 10 + [0] * 5
    r = mcnemar_exact(a, b)
    assert (r.n10, r.n01, r.n) == (6, 1, 22)
    # two-sided exact: 2 * P(X <= 1 | n=7, 1/2) = 2 * (1 + 7) / 128
    assert r.p == pytest.approx(16 / 128, abs=1e-12)
    assert r.rate_a == pytest.approx(16 / 22) and r.rate_b == pytest.approx(11 / 22)


def test_mcnemar_all_discordant_one_way_and_none():
    assert mcnemar_exact([1] * 5, [0] * 5).p == pytest.approx(2 / 32)
    r = mcnemar_exact([1, 0, 1, 0], [1, 0, 1, 0])
    assert (r.n01, r.n10, r.p) == (0, 0, 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_mcnemar_matches_brute_binomial_and_is_symmetric(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(126) < 0.40
    b = rng.random(126) < 0.25
    r = mcnemar_exact(a, b)
    n10 = int((a & ~b).sum())
    n01 = int((~a & b).sum())
    assert (r.n10, r.n01) == (n10, n01)
    assert r.p == pytest.approx(_brute_binom_two_sided(n10, n10 + n01), rel=1e-9)
    swapped = mcnemar_exact(b, a)
    assert (swapped.n10, swapped.n01) == (n01, n10) and swapped.p == pytest.approx(r.p)


def test_mcnemar_refuses_unpaired_or_nonbinary():
    with pytest.raises(ValueError, match="pair"):
        mcnemar_exact([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="0/1"):
        mcnemar_exact([1, 0.5], [1, 0])


# ---------------------------------------------------------------------------- Wilcoxon

def test_wilcoxon_exact_small_sample_matches_sign_flip_enumeration():
    d = np.array([0.9, -0.2, 0.45, 0.7, -0.05, 0.33, 0.6, 0.15, -0.4, 0.8])  # distinct, nonzero
    b = np.full(d.size, 0.1)
    r = wilcoxon_paired(b + d, b)
    assert r.p == pytest.approx(_brute_signflip_p(d), rel=1e-9)
    t_plus = sps.rankdata(np.abs(d))[d > 0].sum()
    assert r.statistic == pytest.approx(min(t_plus, 55 - t_plus))
    assert (r.n, r.n_zero) == (10, 0)


def test_wilcoxon_small_sample_with_zeros_matches_pratt_enumeration():
    # Reciprocal ranks: ties (zero differences) and repeated magnitudes, as on a real board.
    a = np.array([1, 1 / 2, 1, 1 / 3, 1, 1, 1 / 2, 1, 1 / 4, 1, 1 / 2, 1])
    b = np.array([1, 1, 1 / 2, 1 / 3, 1 / 2, 1, 1 / 3, 1 / 2, 1 / 4, 1 / 3, 1 / 2, 1 / 5])
    r = wilcoxon_paired(a, b)
    assert r.n_zero == 5
    assert r.p == pytest.approx(_brute_signflip_p(a - b), rel=1e-6)


def test_wilcoxon_large_sample_with_zeros_matches_pratt_normal_approximation():
    rng = np.random.default_rng(5)
    rank_a = rng.integers(1, 6, 126)
    rank_b = np.where(rng.random(126) < 0.6, rank_a, rng.integers(1, 8, 126))
    a, b = 1.0 / rank_a, 1.0 / rank_b
    r = wilcoxon_paired(a, b)
    assert r.n_zero >= 60  # most runs tie, which is why the zero method matters
    assert r.p == pytest.approx(_pratt_normal_p(a - b), rel=1e-9)
    # the documented choice is not scipy's default, and here it changes the answer
    assert r.p != pytest.approx(sps.wilcoxon(a, b).pvalue, rel=1e-3)


def test_wilcoxon_all_zero_differences_give_p_one():
    r = wilcoxon_paired([1, 0.5, 0.25], [1, 0.5, 0.25])
    assert (r.p, r.n_zero, r.statistic) == (1.0, 3, 0.0)


# ---------------------------------------------------------------------------- bootstrap

def _accuracy_pair(a, b):
    return float(np.mean(a)), float(np.mean(b))


def test_bootstrap_matches_a_plain_reference_loop():
    rng = np.random.default_rng(9)
    a = (rng.random(80) < 0.6).astype(float)
    b = (rng.random(80) < 0.5).astype(float)
    r = paired_bootstrap(_accuracy_pair, a, b, n_boot=500, seed=4)
    # Reference: the documented contract (default_rng(seed), items drawn with replacement).
    ref_rng = np.random.default_rng(4)
    diffs = []
    for _ in range(500):
        idx = ref_rng.integers(0, 80, 80)
        diffs.append(a[idx].mean() - b[idx].mean())
    diffs = np.sort(diffs)
    assert r.ci95 == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])))
    below = sum(d <= 0 for d in diffs)
    above = sum(d >= 0 for d in diffs)
    assert r.p == pytest.approx(min(1.0, 2 * (min(below, above) + 1) / 501))
    assert (r.estimate_a, r.estimate_b) == (a.mean(), b.mean())
    assert r.diff == pytest.approx(a.mean() - b.mean())
    assert (r.n_boot, r.n_dropped, r.n_units) == (500, 0, 80)


def test_bootstrap_is_deterministic_given_seed():
    rng = np.random.default_rng(1)
    a, b = rng.random(50), rng.random(50)
    r1 = paired_bootstrap(_accuracy_pair, a, b, n_boot=300, seed=12)
    r2 = paired_bootstrap(_accuracy_pair, a, b, n_boot=300, seed=12)
    r3 = paired_bootstrap(_accuracy_pair, a, b, n_boot=300, seed=13)
    assert r1 == r2
    assert r1.ci95 != r3.ci95


def test_bootstrap_clear_difference_excludes_zero_and_identical_gives_p_one():
    rng = np.random.default_rng(2)
    a = (rng.random(200) < 0.8).astype(float)
    b = (rng.random(200) < 0.3).astype(float)
    r = paired_bootstrap(_accuracy_pair, a, b)
    assert r.ci95[0] > 0 and r.p <= 2 / 2001 + 1e-12
    same = paired_bootstrap(_accuracy_pair, a, a.copy(), n_boot=200)
    assert same.diff == 0 and same.ci95 == (0.0, 0.0) and same.p == 1.0


def test_cluster_bootstrap_keeps_clusters_whole():
    sizes = [1, 2, 3, 4, 5, 6]
    cluster = np.repeat(np.arange(6), sizes)
    rng = np.random.default_rng(0)
    cluster = rng.permutation(cluster)  # members need not be contiguous
    seen = {"cluster": [], "item": []}

    def whole_clusters(kind):
        def metric(labels):
            counts = np.bincount(labels, minlength=6)
            seen[kind].append(all(counts[c] % sizes[c] == 0 for c in range(6)))
            return float(len(labels)), 0.0
        return metric

    r = paired_bootstrap(whole_clusters("cluster"), cluster, n_boot=200, seed=3, clusters=cluster)
    assert all(seen["cluster"]) and len(seen["cluster"]) == 201
    assert r.n_units == 6
    paired_bootstrap(whole_clusters("item"), cluster, n_boot=200, seed=3)
    assert not all(seen["item"])  # item resampling breaks clusters apart


def test_cluster_bootstrap_is_wider_when_items_move_together():
    # 30 configs x 10 capabilities, hits constant within a config: only 30 independent units,
    # so the cluster interval must be about sqrt(10) times wider than the item interval.
    rng = np.random.default_rng(8)
    config = np.repeat(np.arange(30), 10)
    a = np.repeat((rng.random(30) < 0.6).astype(float), 10)
    b = np.repeat((rng.random(30) < 0.5).astype(float), 10)
    item = paired_bootstrap(_accuracy_pair, a, b, n_boot=1000, seed=0)
    clus = paired_bootstrap(_accuracy_pair, a, b, n_boot=1000, seed=0, clusters=config)
    assert item.diff == clus.diff
    width = lambda r: r.ci95[1] - r.ci95[0]  # noqa: E731
    assert 2.0 < width(clus) / width(item) < 5.0


def test_bootstrap_drops_resamples_where_the_metric_is_undefined():
    y = np.zeros(30, dtype=int)
    y[[3, 17]] = 1  # two positives: some resamples hold none
    rng = np.random.default_rng(6)
    sa, sb = rng.random(30), rng.random(30)
    r = paired_bootstrap(lambda yy, a, b: (roc_auc(yy, a), roc_auc(yy, b)), y, sa, sb,
                         n_boot=400, seed=0)
    # P(no positive in 30 draws) = (28/30)^30 ~ 0.126, so about 50 of 400 are dropped
    assert 20 <= r.n_dropped <= 90 and r.n_boot + r.n_dropped == 400


def test_bootstrap_refuses_unequal_arrays():
    with pytest.raises(ValueError, match="equal length"):
        paired_bootstrap(_accuracy_pair, np.ones(5), np.ones(4))
    with pytest.raises(ValueError, match="one label per item"):
        paired_bootstrap(_accuracy_pair, np.ones(5), np.ones(5), clusters=[1, 2])


# ---------------------------------------------------------------------------- Holm

def test_holm_hand_example():
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> running max keeps .06
    got = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02], atol=1e-15)


def test_holm_caps_at_one_and_handles_ties_and_empty():
    np.testing.assert_allclose(holm([0.5, 0.6, 0.9]), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(holm([0.02, 0.02]), [0.04, 0.04])
    assert holm([]).size == 0


@pytest.mark.parametrize("seed", range(6))
def test_holm_matches_closed_testing_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 8))
    p = np.round(rng.random(m) ** 3, 3)  # many small values, some ties
    got = holm(p)
    np.testing.assert_allclose(got, _brute_holm(p.tolist()), atol=1e-12)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(got[order]) >= 0)  # monotone in the raw p


def test_holm_refuses_invalid_pvalues():
    with pytest.raises(ValueError):
        holm([0.1, float("nan")])
    with pytest.raises(ValueError):
        holm([0.1, 1.2])


# ---------------------------------------------------------------------------- contrasts

def _contrast(family, name, p):
    return Contrast(family, name, "position", 0.4, 0.16, 0.24, 0.1, 0.3, p, "mcnemar_exact")


def test_adjust_family_adjusts_within_each_family_only():
    cs = [
        _contrast("top1", "gpt", 0.01),
        _contrast("mrr", "gpt", 0.04),
        _contrast("top1", "llama", 0.04),
        _contrast("top1", "gemma", 0.03),
        _contrast("mrr", "gemma", float("nan")),  # test could not be run
    ]
    out = adjust_family(cs)
    assert [c.a_name for c in out] == ["gpt", "gpt", "llama", "gemma", "gemma"]
    assert [c.family for c in out] == [c.family for c in cs]
    # top1 family of 3: .03, .06, .06; mrr family of 1 (the NaN does not count): .04
    assert out[0].p_adj == pytest.approx(0.03)
    assert out[2].p_adj == pytest.approx(0.06)
    assert out[3].p_adj == pytest.approx(0.06)
    assert out[1].p_adj == pytest.approx(0.04)
    assert math.isnan(out[4].p_adj)
    assert [c.verdict for c in out] == [
        "separates", "separates", "unresolved", "unresolved", "unresolved"]
    assert cs[0].p_adj is None and cs[0].verdict is None  # inputs untouched


def test_adjust_family_boundary_and_never_equal():
    out = adjust_family([_contrast("f", "x", 0.05), _contrast("g", "y", 1.0)], alpha=0.05)
    assert [c.verdict for c in out] == ["unresolved", "unresolved"]  # p_adj < alpha is strict
    assert all(c.verdict != "equal" for c in out)
    assert adjust_family([_contrast("f", "x", 0.05)], alpha=0.1)[0].verdict == "separates"
    with pytest.raises(ValueError):
        adjust_family([], alpha=0)


@pytest.mark.parametrize("n, n_boot", [(1, 50), (7, 300), (230, 2000), (1_500, 1_400)])
def test_paired_mean_bootstrap_equals_the_generic_bootstrap_of_means(n, n_boot):
    """The block-wise bootstrap of two means draws the same resamples as paired_bootstrap and
    reduces them the same way, so every field is equal (not merely close), for binary hits and
    for reciprocal ranks, whether its draws are kept (n x n_boot up to 2M) or drawn per block."""
    from auditatlas.stats import paired_mean_bootstrap

    rng = np.random.default_rng(n)
    hits_a, hits_b = (rng.random(n) < 0.3).astype(float), (rng.random(n) < 0.4).astype(float)
    rr_a, rr_b = 1.0 / rng.integers(1, 20, n), 1.0 / rng.integers(1, 20, n)
    for a, b in ((hits_a, hits_b), (rr_a, rr_b)):
        generic = paired_bootstrap(lambda x, y: (float(np.mean(x)), float(np.mean(y))), a, b, n_boot=n_boot, seed=0)
        assert paired_mean_bootstrap(a, b, n_boot=n_boot, seed=0) == generic
        assert paired_mean_bootstrap(a, b, n_boot=n_boot, seed=0, block=7) == generic


@pytest.mark.parametrize("keep_draws", [2_000_000, 10], ids=["draws kept", "draws made per block"])
def test_paired_sums_bootstrap_equals_the_generic_bootstrap_of_summed_counts(monkeypatch, keep_draws):
    """The PRE contrasts' all-at-once bootstrap of F1 from per-configuration counts gives every
    field paired_bootstrap gives resampling the configurations one by one (whole-number sums
    are exact in any order), including resamples where an entrant's F1 has nothing to divide by."""
    from auditatlas import stats

    def f1(tp, fp, fn):
        denom = 2 * tp + fp + fn
        return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)

    rng = np.random.default_rng(3)
    k = 120
    a = [rng.integers(0, 3, k) * (rng.random(k) < 0.2), rng.integers(0, 2, k), rng.integers(0, 3, k)]
    b = [np.zeros(k), np.zeros(k), rng.integers(0, 3, k) * (rng.random(k) < 0.05)]  # flags nothing, rare truths

    def pair(*counts):
        return float(f1(*(np.array([c.sum()]) for c in counts[:3]))[0]), \
            float(f1(*(np.array([c.sum()]) for c in counts[3:]))[0])

    generic = paired_bootstrap(pair, *a, *b, n_boot=500, seed=0)
    monkeypatch.setattr(stats, "_KEEP_DRAWS", keep_draws)
    assert stats.paired_sums_bootstrap(a, b, f1, n_boot=500, seed=0) == generic
    assert generic.n_dropped == 0 and generic.ci95[0] < generic.diff < generic.ci95[1]


def test_bootstrap_of_a_mean_in_small_blocks_is_the_resample_by_resample_bootstrap(monkeypatch):
    """However few resamples a block holds (large boards hold fewer), the interval is the one
    drawn resample by resample: one ``integers(0, n, size=n)`` per resample, percentile 95%."""
    import numpy as np

    from auditatlas import stats

    x = np.random.default_rng(5).random(1_001)
    rng = np.random.default_rng(0)
    means = [x[rng.integers(0, x.size, size=x.size)].mean() for _ in range(300)]
    expected = tuple(np.quantile(means, [0.025, 0.975]))
    monkeypatch.setattr(stats, "_KEEP_DRAWS", 0)  # drawn block by block, not kept
    monkeypatch.setattr(stats, "_BLOCK_VALUES", 3_000)  # two resamples a block
    assert stats.bootstrap_mean_ci(x, n_boot=300, seed=0) == pytest.approx(expected, abs=1e-15)
    y = np.random.default_rng(6).random(1_001)
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(300):
        idx = rng.integers(0, x.size, size=x.size)
        diffs.append(x[idx].mean() - y[idx].mean())
    got = stats.paired_mean_bootstrap(x, y, n_boot=300, seed=0)
    assert list(got.ci95) == pytest.approx(list(np.quantile(diffs, [0.025, 0.975])), abs=1e-15)


@pytest.mark.parametrize("keep_draws", [2_000_000, 10], ids=["draws kept", "draws made per call"])
def test_shared_resamples_give_each_calls_own_numbers_from_one_pass(monkeypatch, keep_draws):
    """A board's intervals and contrasts inside ``shared_resamples`` read resample means taken
    together: the same intervals and contrasts, to the last bit, with no draws made per call."""
    from auditatlas import stats

    monkeypatch.setattr(stats, "_KEEP_DRAWS", keep_draws)
    stats._kept_draws.cache_clear()
    rng = np.random.default_rng(11)
    a, b, c = rng.random(301), (rng.random(301) < 0.4).astype(float), 1.0 / rng.integers(1, 9, 301)
    short = rng.random(57)
    alone = (stats.bootstrap_mean_ci(a), stats.bootstrap_mean_ci(short),
             stats.paired_mean_bootstrap(a, b), stats.paired_mean_bootstrap(c, b))
    with stats.shared_resamples([a, b, c, short]):
        calls = []
        real = stats._resample_blocks
        monkeypatch.setattr(stats, "_resample_blocks", lambda *args: calls.append(args) or real(*args))
        shared = (stats.bootstrap_mean_ci(a), stats.bootstrap_mean_ci(short),
                  stats.paired_mean_bootstrap(a, b), stats.paired_mean_bootstrap(c, b))
        assert not calls  # every mean came from the pass made on entering
        stats.bootstrap_mean_ci(a[:300])  # a vector not passed in draws its own
        assert len(calls) == 1
    assert shared == alone
    assert stats._SHARED.get() is None
