"""95% intervals beside compared numbers: the run-clustered ROC-AUC interval
(Obuchowski 1997) against a hand-worked example, DeLong with one item a cluster and a brute-force
cluster bootstrap; the grid's SQL (live and ranked twin) against it; an undefined cell with its
reason; the grid's table and CSV columns; the boards' intervals against scipy called here."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

import queries
from auditatlas.analyses import board_intervals, board_seeds
from auditatlas.analyses import detector_comparison as dv
from auditatlas.analyses.board_registry import BoardResult, BoardRow
from auditatlas.errors import UndefinedMetric
from auditatlas.figures import boards as board_figs
from auditatlas.figures import detectors as figs
from auditatlas.stats import clopper_pearson, clustered_auc
from auditatlas.store import write_source

# ----------------------------------------------------------------------------- the clustered AUC

# Three runs. Positives X = 0.9 (run 1), 0.4 (run 2), 0.8 (run 3); negatives Y = 0.3 (run 1),
# 0.5 (run 2), 0.2 and 0.6 (run 3). M = 3, N = 4.
HAND_Y = [1, 0, 1, 0, 1, 0, 0]
HAND_SCORE = [0.9, 0.3, 0.4, 0.5, 0.8, 0.2, 0.6]
HAND_RUN = ["r1", "r1", "r2", "r2", "r3", "r3", "r3"]


def test_clustered_auc_matches_the_hand_worked_obuchowski_variance():
    # V10 (share of negatives below each positive): 0.9 -> 4/4, 0.4 -> 2/4, 0.8 -> 4/4: AUC = 2.5/3 = 5/6.
    # V01 (share of positives above each negative): 0.3 -> 1, 0.5 -> 2/3, 0.2 -> 1, 0.6 -> 2/3.
    # Per run (V10_i - m_i A, V01_i - n_i A): r1 (1/6, 1/6), r2 (-1/3, -1/6), r3 (1/6, 5/3 - 10/6 = 0).
    # S10 = 3/(2*3) * (1/36 + 1/9 + 1/36) = 1/12; S01 = 3/(2*4) * (1/36 + 1/36) = 1/48;
    # S11 = 3/2 * (1/36 + 1/18 + 0) = 1/8.  Var = (1/12)/3 + (1/48)/4 + 2 (1/8)/12 = 31/576.
    got = clustered_auc(HAND_Y, HAND_SCORE, HAND_RUN)
    assert got.auc == pytest.approx(5 / 6)
    assert got.se ** 2 == pytest.approx(31 / 576)
    assert got.n_clusters == 3
    assert got.ci95 == pytest.approx((5 / 6 - 1.959964 * math.sqrt(31 / 576), 1.0), abs=1e-5)  # clipped at 1


def _delong_variance_by_pairs(y: np.ndarray, s: np.ndarray) -> float:
    """DeLong's variance of one AUC from the pair kernel written out (no ranks)."""
    pos, neg = s[y == 1], s[y == 0]
    kernel = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = kernel.mean(axis=1), kernel.mean(axis=0)
    return float(np.var(v10, ddof=1) / pos.size + np.var(v01, ddof=1) / neg.size)


def test_one_item_per_cluster_is_delongs_interval():
    rng = np.random.default_rng(3)
    y = (rng.random(80) < 0.3).astype(int)
    s = np.round(rng.normal(size=80) + y, 1)  # rounded: ties count one half
    got = clustered_auc(y, s)
    assert got.auc == pytest.approx(roc_auc_score(y, s))
    assert got.se ** 2 == pytest.approx(_delong_variance_by_pairs(y, s))


def test_clustered_se_agrees_with_a_brute_force_cluster_bootstrap():
    """Runs with a shared offset (steps of one run move together): the clustered SE is close to
    a cluster bootstrap's (sklearn's AUC on whole runs drawn with replacement) and wider than
    the SE that treats steps as independent."""
    rng = np.random.default_rng(7)
    runs, per_run = 60, 8
    cluster = np.repeat(np.arange(runs), per_run)
    y = (rng.random(runs * per_run) < 0.3).astype(int)
    s = rng.normal(size=runs)[cluster] * 1.2 + rng.normal(size=runs * per_run) + 0.8 * y
    got = clustered_auc(y, s, cluster)
    # 1,000 resamples of whole runs at once; each resample's AUC is the Mann-Whitney rank sum
    # (scipy's midranks, one row per resample), checked against sklearn on the first one.
    picks = rng.integers(0, runs, size=(1000, runs))
    idx = (picks[:, :, None] * per_run + np.arange(per_run)).reshape(1000, -1)
    yb, ranks = y[idx], sps.rankdata(s[idx], axis=1)
    n_pos = yb.sum(axis=1)
    boot = ((ranks * yb).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * (yb.shape[1] - n_pos))
    assert boot[0] == pytest.approx(roc_auc_score(yb[0], s[idx[0]]))
    assert got.se == pytest.approx(np.std(boot, ddof=1), rel=0.05)
    assert got.se > 1.2 * clustered_auc(y, s).se


def test_one_class_or_one_run_has_no_interval():
    with pytest.raises(UndefinedMetric, match="needs at least one of each"):
        clustered_auc([1, 1, 1], [0.1, 0.2, 0.3], ["a", "b", "c"])
    with pytest.raises(UndefinedMetric, match="at least 2 clusters with a positive"):
        clustered_auc([1, 0, 1, 0, 0], [0.9, 0.1, 0.8, 0.2, 0.3], ["a", "a", "a", "b", "c"])


# ----------------------------------------------------------------------------- the grid

CORPUS = "civ"


def _store_tables() -> dict:
    """Twelve runs on backbone A: action X has positives and negatives in most runs; action Y's
    only positive is in run 0 (too few runs for an interval); action Z has no positive."""
    rng = np.random.default_rng(11)
    runs, steps, preds = [], [], []
    for r in range(12):
        run_id = f"{CORPUS}:r{r}"
        runs.append({"run_id": run_id, "corpus": CORPUS, "backbone": "A", "outcome": "failure", "n_steps": 7,
                     "run_key": f"k{r}"})
        offset = rng.normal()
        for i in range(7):
            action = "X" if i < 4 else ("Y" if i < 6 else "Z")
            label = int(rng.random() < 0.4) if action == "X" else int(action == "Y" and r == 0 and i == 4)
            steps.append({"run_id": run_id, "corpus": CORPUS, "step_idx": i, "action": action, "label": label,
                          "scope": run_id, "agent": "a", "step_id": f"{run_id}#{i}", "scope_success": False})
            preds.append({"set_id": "det:s0", "corpus": CORPUS, "run_id": run_id, "step_idx": i,
                          "score": round(float(offset + rng.normal() + label), 1), "pred_label": None,
                          "split": "test"})
    sets = [{"set_id": "det:s0", "corpus": CORPUS, "method": "det", "family": "tabular", "supervision": "unsupervised",
             "granularity": "step", "seed": 0, "feature_set": "f", "origin": "rescore", "params": "{}"}]
    return {"runs": runs, "steps": steps, "prediction_sets": sets, "predictions": preds}


@pytest.fixture(scope="module")
def civ(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("intervals-store")
    tables = _store_tables()
    write_source(root, "fixture", tables)
    steps = pd.DataFrame(tables["steps"]).merge(pd.DataFrame(tables["predictions"]), on=["run_id", "step_idx"])
    return root, steps


@pytest.mark.parametrize("slice_", [None, {"outcome": ["failure"]}], ids=["ranked twin", "live window"])
def test_grid_cell_interval_is_the_clustered_auc_of_its_steps(civ, slice_):
    root, steps = civ
    cells = dv.grid_cells(queries.runner(root), slice_, ["det:s0"], ["A"], ["X", "Y", "Z"], True)
    x = cells.set_index("action").loc["X"]
    part = steps[steps["action"] == "X"]
    ref = clustered_auc(part["label"], part["score"], part["run_id"])
    assert x["auc"] == pytest.approx(roc_auc_score(part["label"], part["score"]))
    assert x["auc_se"] == pytest.approx(ref.se)
    assert (x["auc_low"], x["auc_high"]) == pytest.approx(ref.ci95)
    assert x["n_runs"] == 12 and x["interval_reason"] == ""


def test_grid_cell_without_an_interval_says_why(civ):
    root, _ = civ
    cells = dv.grid_cells(queries.runner(root), None, ["det:s0"], ["A"], ["X", "Y", "Z"], True).set_index("action")
    assert np.isfinite(cells.loc["Y", "auc"]) and np.isnan(cells.loc["Y", "auc_low"])
    assert cells.loc["Y", "interval_reason"].startswith("too few runs: 1 with positives")
    assert np.isnan(cells.loc["Z", "auc"]) and np.isnan(cells.loc["Z", "auc_low"])
    assert cells.loc["Z", "interval_reason"] == "no ROC-AUC (one class only)"


def test_grid_table_and_csv_carry_the_interval(civ):
    root, steps = civ
    grid = dv.compute_grid(queries.runner(root), CORPUS, None, True)
    part = steps[steps["action"] == "X"]
    low, high = clustered_auc(part["label"], part["score"], part["run_id"]).ci95
    text, _, titles = dv.wide_grid(grid, "A")
    col = next(iter(titles))
    row = text[text["action"].str.endswith("X")].iloc[0]
    assert f"[{low:.3f}, {high:.3f}]" in row[col]
    y_row = text[text["action"].str.endswith("Y")].iloc[0]
    assert "[no interval]" in y_row[col]
    # On screen the cell is its number: the interval and the counts are the CSV's and the long table's.
    shown, _, _ = dv.wide_grid(grid, "A", detail=False)
    cell = shown[shown["action"].str.endswith("X")].iloc[0][col]
    mean = grid.cells.set_index(["backbone", "detector"]).loc[("A", titles[col])]
    mean = mean[mean["action"] == "X"].iloc[0]
    assert cell.startswith(f"{mean['auc_mean']:.3f}") and "[" not in cell and "+" not in cell.replace("±", "")
    assert "[" not in shown.iloc[-1][col] and shown.iloc[-1][col].endswith("(2 actions)")
    long = figs.long_cells(grid).set_index("action")
    assert long.loc["X", "95% low"] == pytest.approx(low, abs=5e-5)
    assert long.loc["X", "95% high"] == pytest.approx(high, abs=5e-5)
    assert long.loc["X", "95% interval of"] == "one set"
    assert long.loc["X", "95% interval method"] == dv.INTERVAL_METHOD
    assert long.loc["Z", "no interval because"] == "no ROC-AUC (one class only)"
    assert "clustered by run (Obuchowski" in dv.INTERVAL_CAPTION


def test_overall_roc_auc_carries_the_run_clustered_interval_of_all_its_steps(civ):
    """The Overall tab: a set's ROC-AUC over every labeled test step of the slice (all three
    actions) with the interval clustered by run of those steps, in the table and its CSV."""
    root, steps = civ
    overall = dv.compute_overall(queries.runner(root), CORPUS, None)
    ref = clustered_auc(steps["label"], steps["score"], steps["run_id"])
    one = overall.per_set.set_index("set_id").loc["det:s0"]
    assert one["auc"] == pytest.approx(roc_auc_score(steps["label"], steps["score"]))
    assert (one["auc_low"], one["auc_high"]) == pytest.approx(ref.ci95)
    frame = figs.overall_frame(overall.per_detector).set_index("detector").iloc[0]
    assert frame["ROC-AUC 95%"] == f"[{ref.ci95[0]:.3f}, {ref.ci95[1]:.3f}]" and frame["interval of"] == "one set"
    assert frame["ROC-AUC 95% low"] == pytest.approx(ref.ci95[0], abs=5e-5)
    assert "span of their intervals" in dv.OVERALL_INTERVAL_CAPTION


def test_a_mean_over_cells_with_a_cell_lacking_an_interval_says_why(civ):
    """civ's detector has cells X (an interval) and Y (one run with a positive: none); Z is
    undefined and not in the mean. Its bottom-row mean has no interval and says why; the right
    column's mean of X (one cell) has the cell's own interval, up to the small-sample factor."""
    root, steps = civ
    grid = dv.compute_grid(queries.runner(root), CORPUS, None, True)
    bottom = grid.detector_means.iloc[0]
    assert bottom["n_cells"] == 2 and np.isnan(bottom["ci_low"])
    assert bottom["ci_reason"] == "1 of its 2 cells have too few runs for an interval"
    x = grid.action_means.set_index("action").loc["X"]
    part = steps[steps["action"] == "X"]
    ref = clustered_auc(part["label"], part["score"], part["run_id"])
    assert x["mean"] == pytest.approx(ref.auc) and x["n_runs"] == 12
    assert x["se"] == pytest.approx(ref.se, rel=0.05)  # one factor I/(I-1) for Obuchowski's three
    text, _, titles = dv.wide_grid(grid, "A")
    assert text.iloc[-1][next(iter(titles))].endswith("[no interval] (2 actions)")
    assert f"[{x['ci_low']:.3f}, {x['ci_high']:.3f}] (1 cell)" in text[text["action"].str.endswith("X")].iloc[0][
        "mean over detectors"]
    long = figs.long_means(grid).set_index(["mean over", "detector or action"])
    assert long.loc[("detectors", "X"), "95% low"] == pytest.approx(x["ci_low"], abs=5e-5)
    assert long.loc[("detectors", "X"), "95% interval method"] == dv.MEAN_INTERVAL_METHOD
    assert long.loc[("actions", bottom["detector"]), "no interval because"] == bottom["ci_reason"]
    assert "A mean's interval" in dv.INTERVAL_CAPTION


MEANS_CORPUS = "mean"
MEANS_RUNS, MEANS_X, MEANS_Y = 80, 4, 3  # runs; steps of action X and of action Y per run
MEANS_SETS = {"det:s0": "det", "det:s1": "det", "other:s0": "other"}


def _means_tables() -> tuple[dict, pd.DataFrame]:
    """Runs whose steps share an offset in every set's score (one run is one draw for all of
    them), so the grid's cells are correlated through their runs."""
    rng = np.random.default_rng(5)
    runs, steps, preds, rows = [], [], [], []
    for r in range(MEANS_RUNS):
        run_id = f"{MEANS_CORPUS}:r{r}"
        runs.append({"run_id": run_id, "corpus": MEANS_CORPUS, "backbone": "A", "outcome": "failure",
                     "n_steps": MEANS_X + MEANS_Y, "run_key": f"k{r}"})
        offset = 1.5 * rng.normal()
        for i in range(MEANS_X + MEANS_Y):
            action = "X" if i < MEANS_X else "Y"
            label = int(rng.random() < (0.35 if action == "X" else 0.5))
            steps.append({"run_id": run_id, "corpus": MEANS_CORPUS, "step_idx": i, "action": action,
                          "label": label, "scope": run_id, "agent": "a", "step_id": f"{run_id}#{i}",
                          "scope_success": False})
            for set_id in MEANS_SETS:
                score = float(offset + rng.normal() + 0.7 * label)
                preds.append({"set_id": set_id, "corpus": MEANS_CORPUS, "run_id": run_id, "step_idx": i,
                              "score": score, "pred_label": None, "split": "test"})
                rows.append((set_id, r, action, label, score))
    sets = [{"set_id": sid, "corpus": MEANS_CORPUS, "method": det, "family": "tabular",
             "supervision": "unsupervised", "granularity": "step", "seed": int(sid[-1]), "feature_set": "f",
             "origin": "rescore", "params": "{}"} for sid, det in MEANS_SETS.items()]
    tables = {"runs": runs, "steps": steps, "prediction_sets": sets, "predictions": preds}
    return tables, pd.DataFrame(rows, columns=["set_id", "run", "action", "label", "score"])


@pytest.fixture(scope="module")
def means_store(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("grid-means-store")
    tables, scored = _means_tables()
    write_source(root, "fixture", tables)
    return root, scored


def _bootstrap_aucs(scored: pd.DataFrame, n_boot: int, seed: int) -> dict[tuple[str, str], np.ndarray]:
    """Per (set, action), the ROC-AUC of each resample of whole runs drawn with replacement
    (every run has the same number of steps of an action, so a resample is an index array):
    the Mann-Whitney rank sum on scipy's midranks, one row per resample."""
    picks = np.random.default_rng(seed).integers(0, MEANS_RUNS, size=(n_boot, MEANS_RUNS))
    out = {}
    for (set_id, action), part in scored.groupby(["set_id", "action"]):
        part = part.sort_values("run", kind="stable")
        per_run = MEANS_X if action == "X" else MEANS_Y
        y, s = part["label"].to_numpy(), part["score"].to_numpy()
        idx = (picks[:, :, None] * per_run + np.arange(per_run)).reshape(n_boot, -1)
        yb, ranks = y[idx], sps.rankdata(s[idx], axis=1)
        n_pos = yb.sum(axis=1)
        out[(set_id, action)] = ((ranks * yb).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * (yb.shape[1] - n_pos))
        assert out[(set_id, action)][0] == pytest.approx(roc_auc_score(yb[0], s[idx[0]]))
    return out


@pytest.mark.parametrize("slice_", [None, {"outcome": ["failure"]}], ids=["ranked twin", "live window"])
def test_grid_means_se_agrees_with_a_brute_force_cluster_bootstrap(means_store, slice_):
    """The bottom row (det: its two seeds per cell, then the mean over X and Y) and the right
    column (X: det's cell and other's, averaged) against 1,000 resamples of whole runs: the
    same means recomputed on each; their standard deviation is the SE to match. The cells share
    runs, so the SE is wider than the one that treats them as independent."""
    root, scored = means_store
    grid = dv.compute_grid(queries.runner(root), MEANS_CORPUS, slice_, True)
    boot = _bootstrap_aucs(scored, 1000, seed=3)
    det_cell = {a: (boot[("det:s0", a)] + boot[("det:s1", a)]) / 2 for a in ("X", "Y")}
    det_mean = (det_cell["X"] + det_cell["Y"]) / 2
    x_mean = (det_cell["X"] + boot[("other:s0", "X")]) / 2
    aucs = {k: roc_auc_score(g["label"], g["score"]) for k, g in scored.groupby(["set_id", "action"])}
    bottom = grid.detector_means.set_index("detector").loc["det · f"]
    right = grid.action_means.set_index("action").loc["X"]
    assert bottom["mean"] == pytest.approx((aucs[("det:s0", "X")] + aucs[("det:s1", "X")]
                                            + aucs[("det:s0", "Y")] + aucs[("det:s1", "Y")]) / 4)
    assert right["mean"] == pytest.approx(((aucs[("det:s0", "X")] + aucs[("det:s1", "X")]) / 2
                                           + aucs[("other:s0", "X")]) / 2)
    assert bottom["se"] == pytest.approx(np.std(det_mean, ddof=1), rel=0.1)
    assert right["se"] == pytest.approx(np.std(x_mean, ddof=1), rel=0.1)
    assert bottom["n_runs"] == MEANS_RUNS and bottom["ci_reason"] == ""
    assert (bottom["ci_low"], bottom["ci_high"]) == pytest.approx((bottom["mean"] - 1.959964 * bottom["se"],
                                                                   bottom["mean"] + 1.959964 * bottom["se"]))
    # Treating the four set-cells as independent (the sum of their own variances) is too narrow.
    own = [np.var(boot[(sid, a)], ddof=1) for sid in ("det:s0", "det:s1") for a in ("X", "Y")]
    assert bottom["se"] > 1.3 * math.sqrt(sum(own) / 16)


def test_a_set_the_pooled_cells_lack_has_no_interval_and_says_why():
    per_set = pd.DataFrame({"set_id": ["s0", "s1"], "auc": [0.6, 0.7]})
    pooled = pd.DataFrame({"set_id": ["s0", "s1"], "auc_low": [0.52, 0.61], "auc_high": [0.68, 0.79],
                           "interval_reason": ["", ""]})
    got = dv.with_pooled_intervals(per_set, pooled)
    assert got["auc_low"].tolist() == [0.52, 0.61]
    missing = dv.with_pooled_intervals(pd.DataFrame({"set_id": ["s2"], "auc": [0.5]}), pooled)
    assert np.isnan(missing["auc_low"].iloc[0]) and missing["interval_reason"].iloc[0] == "no scored test step"


def test_a_seed_cell_spans_its_seeds_intervals():
    per_set = pd.DataFrame({"set_id": ["s0", "s1", "s2"], "backbone": "A", "action": "X", "n_pos": [5, 6, 1],
                            "n_neg": [20, 20, 20], "auc": [0.60, 0.70, 0.80], "auc_low": [0.50, 0.55, np.nan],
                            "auc_high": [0.70, 0.80, np.nan],
                            "interval_reason": ["", "", "too few runs: 1 with positives, 9 with negatives"]})
    sets = pd.DataFrame({"set_id": ["s0", "s1", "s2"], "detector": "det"})
    cell = dv.aggregate_cells(per_set, sets).iloc[0]
    assert (cell["ci_low"], cell["ci_high"]) == (0.50, 0.80)  # lowest low, highest high
    assert cell["ci_of"] == "span of 2 seeds' intervals (2 of 3 seeds have one)"
    assert cell["auc_mean"] == pytest.approx(0.7) and cell["auc_std"] == pytest.approx(0.1)
    alone = dv.aggregate_cells(per_set.iloc[2:], sets).iloc[0]
    assert np.isnan(alone["ci_low"]) and alone["ci_reason"].startswith("too few runs")


# ----------------------------------------------------------------------------- boards

def test_board_share_interval_is_clopper_pearson():
    hits = np.array([1.0] * 12 + [0.0] * 30 + [np.nan] * 5)  # 12 of 42 scored runs
    ci = sps.binomtest(12, 42).proportion_ci(confidence_level=0.95, method="exact")
    assert board_intervals.share_interval(hits) == pytest.approx([ci.low, ci.high])
    # Hand-worked: 0 of 10 has the exact upper bound 1 - 0.025 ** (1/10).
    assert clopper_pearson(0, 10) == pytest.approx((0.0, 1 - 0.025 ** 0.1))


def test_board_mean_interval_is_a_seeded_percentile_bootstrap():
    """Against a bootstrap written out here: 2,000 resamples of the runs, one
    default_rng(0).integers(0, n, size=n) each, the 2.5/97.5 percentiles of their means."""
    rr = np.array([1, 0.5, 1 / 3, 1, 0.25, 1, 0.5, 0.2, 1, 1 / 3, np.nan])  # the NaN: a run not scored
    x = rr[:-1]
    rng = np.random.default_rng(0)
    means = [x[rng.integers(0, x.size, size=x.size)].mean() for _ in range(2000)]
    assert board_intervals.mean_interval(rr) == pytest.approx(list(np.quantile(means, [0.025, 0.975])))
    # and close to scipy's percentile bootstrap of the same data (its own draws)
    ref = sps.bootstrap((x,), np.mean, n_resamples=2000, method="percentile",
                        random_state=np.random.default_rng(0)).confidence_interval
    assert board_intervals.mean_interval(rr) == pytest.approx([ref.low, ref.high], abs=0.05)


def test_pre_interval_bootstraps_whole_configurations():
    """Against a cluster bootstrap written out here: configurations drawn with replacement, F1 of
    the drawn pairs' summed counts."""
    tp, fp, fn = np.array([2, 0, 1, 3, 0]), np.array([1, 1, 0, 2, 0]), np.array([0, 2, 1, 0, 1])
    got = board_intervals.pre_intervals(tp, fp, fn, n_scored=5, n_configs=6, n_boot=500)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, 5, size=(500, 5))
    f1 = [2 * tp[d].sum() / (2 * tp[d].sum() + fp[d].sum() + fn[d].sum()) for d in draws]
    assert got["f1"] == pytest.approx(list(np.quantile(f1, [0.025, 0.975])))
    ci = sps.binomtest(5, 6).proportion_ci(method="exact")
    assert got["coverage"] == pytest.approx([ci.low, ci.high])
    none = board_intervals.pre_intervals(np.zeros(5), np.zeros(5), fn, n_scored=5, n_configs=5, n_boot=100)
    assert "precision" not in none  # nothing flagged: precision is a convention, not an estimate


def _result(rows: list[BoardRow]) -> BoardResult:
    return BoardResult("b", "B", "POST", "c", ("top1",), "floor", 40, "runs", rows,
                       interval_methods={"top1": board_intervals.CLOPPER_PEARSON_RUNS})


def test_board_table_and_csv_carry_the_interval_and_a_seed_group_its_span():
    rows = [BoardRow("floor", {"top1": 0.1}, n_items=40, role="floor", intervals={"top1": [0.03, 0.24]})]
    rows += [BoardRow(f"det-s{i}", {"top1": v}, n_items=40, seed_group="det [b]", seed=i, intervals={"top1": iv})
             for i, (v, iv) in enumerate([(0.4, [0.25, 0.56]), (0.5, [0.34, 0.66])])]
    shown, csv = board_figs.shown_rows(_result(rows))
    group = shown.set_index("entrant").loc["det"]
    assert group["top1"] == "0.450 ± 0.071" and group["top1 95%"] == "[0.250, 0.660]"
    assert csv.set_index("entrant").loc["floor", ["top1 95% low", "top1 95% high"]].tolist() == [0.03, 0.24]
    caption = board_figs.interval_caption(_result(rows), grouped=True)
    assert "Clopper-Pearson over runs" in caption and "not an interval of the mean" in caption
    per_seed, _ = board_figs.shown_rows(_result(rows), per_seed=True)
    assert per_seed.set_index("entrant").loc["det · seed 1", "top1 95%"] == "[0.340, 0.660]"  # named by detector and seed
    assert board_seeds.entries(_result(rows))[0].intervals  # every line carries its interval
