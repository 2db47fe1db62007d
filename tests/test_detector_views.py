"""Detector views (auditatlas/analyses/detector_comparison.py and the grid_*/detector_* queries) on small
authored stores: ROC-AUC cells against hand-computed values (ties count one half) and against
scikit-learn on random data, undefined cells, grid means, false-positive / false-negative
lists, overall metrics against scikit-learn, the one-tailed test against scipy, cost from
provenance, and released sets (an imported CSV-style set and a judge ranking) beside
re-scored ones."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

import queries
from auditatlas.analyses import detector_comparison as dv
from auditatlas.store import write_source

CORPUS = "toy"

# Runs: r1, r2, r4 on backbone A; r3 on backbone B. r4 only ever appears in the train split.
RUNS = [
    {"run_id": "toy:r1", "backbone": "A", "outcome": "failure", "n_steps": 3, "run_key": "k1"},
    {"run_id": "toy:r2", "backbone": "A", "outcome": "success", "n_steps": 3, "run_key": "k2"},
    {"run_id": "toy:r3", "backbone": "B", "outcome": "success", "n_steps": 3, "run_key": "k3"},
    {"run_id": "toy:r4", "backbone": "A", "outcome": "failure", "n_steps": 1, "run_key": "k4"},
]
# (run, step_idx, action, label, scope_success)
STEPS = [
    ("toy:r1", 0, "X", 1, False), ("toy:r1", 1, "Y", 0, False), ("toy:r1", 2, "X", 0, False),
    ("toy:r2", 0, "X", 0, True), ("toy:r2", 1, "Y", 1, True), ("toy:r2", 2, "X", 1, False),
    ("toy:r3", 0, "X", 0, True), ("toy:r3", 1, "Y", 0, True), ("toy:r3", 2, "X", None, True),
    ("toy:r4", 0, "X", 1, False),
]
# Scores per set in STEPS order (r4 last: train split).
SCORES = {
    "det:s0": [0.9, 0.2, 0.5, 0.5, 0.7, 0.5, 0.1, 0.4, 0.8, 0.0],
    "det:s1": [0.3, 0.6, 0.8, 0.2, 0.9, 0.8, 0.1, 0.4, 0.95, 0.0],
}
# det:s0 decides itself (score >= 0.5); det:s1 has no decisions (top-k applies).
OWN_LABELS = {"det:s0": [1, 0, 1, 1, 1, 1, 0, 0, 1, 0], "det:s1": [None] * 10}


def _query(root: Path):
    return queries.runner(root)


def _toy_tables() -> dict:
    runs = [{**r, "corpus": CORPUS} for r in RUNS]
    steps = [{"run_id": r, "corpus": CORPUS, "step_idx": i, "action": a, "label": lab, "scope_success": ok,
              "scope": r, "agent": f"agent-{i}", "step_id": f"{r}#{i}"} for r, i, a, lab, ok in STEPS]
    sets = [
        {"set_id": sid, "corpus": CORPUS, "method": "det", "family": "tabular", "supervision": "unsupervised",
         "granularity": "step", "seed": seed, "feature_set": "f", "origin": "rescore",
         "params": json.dumps({"fit_seconds": 2.0 + seed, "score_seconds": 0.5, "peak_memory_mb": 100.0 + 10 * seed})}
        for seed, sid in enumerate(SCORES)
    ]
    # A released CSV set (no provenance), a judge ranking (release) and a run-level set.
    sets += [
        {"set_id": "csv:xgb", "corpus": CORPUS, "method": "xgboost", "family": "tree", "supervision": "supervised",
         "granularity": "step", "origin": "release", "params": "{}"},
        {"set_id": "judge:m", "corpus": CORPUS, "method": "llm_judge", "family": "llm", "supervision": "zero-shot",
         "granularity": "step", "protocol": "all_at_once", "model": "m", "origin": "release", "params": "not json"},
        {"set_id": "runlevel", "corpus": CORPUS, "method": "ecod", "family": "tabular", "supervision": "unsupervised",
         "granularity": "run", "origin": "rescore"},
    ]
    preds = []
    for sid, scores in SCORES.items():
        for (r, i, *_), score, own in zip(STEPS, scores, OWN_LABELS[sid]):
            preds.append({"set_id": sid, "corpus": CORPUS, "run_id": r, "step_idx": i, "score": score,
                          "pred_label": own, "split": "train" if r == "toy:r4" else "test"})
    for (r, i, *_), score in zip(STEPS, [0.8, 0.1, 0.3, 0.2, 0.6, 0.9, 0.5, 0.5, 0.5, 0.7]):
        preds.append({"set_id": "csv:xgb", "corpus": CORPUS, "run_id": r, "step_idx": i, "score": score,
                      "pred_label": None, "split": "test"})
    preds += [{"set_id": "runlevel", "corpus": CORPUS, "run_id": r["run_id"], "score": 0.5, "split": "all"} for r in RUNS]
    # Judge: r1 top 0, ranking [0, 2, 1] -> scores 4, 1, 2; r2 no top, ranking [1] -> 0, 3, 0.
    rankings = [{"set_id": "judge:m", "corpus": CORPUS, "run_key": "k1", "top": 0, "ranking": [0, 2, 1]},
                {"set_id": "judge:m", "corpus": CORPUS, "run_key": "k2", "top": None, "ranking": [1]}]
    return {"runs": runs, "steps": steps, "prediction_sets": sets, "predictions": preds, "rankings": rankings}


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy-store")
    write_source(root, "fixture", _toy_tables())
    return root


def _cells(root: Path, by_backbone: bool, by_action: bool = True, slice_=None) -> pd.DataFrame:
    ids = ["det:s0", "det:s1", "csv:xgb", "judge:m"]
    return dv.grid_cells(_query(root), slice_, ids, ["A", "B"], ["X", "Y"], by_backbone, by_action)


def _cell(frame: pd.DataFrame, set_id: str, backbone: str, action: str) -> pd.Series:
    row = frame[(frame.set_id == set_id) & (frame.backbone == backbone) & (frame.action == action)]
    assert len(row) == 1, (set_id, backbone, action, frame)
    return row.iloc[0]


# ----------------------------------------------------------------------------- grid cells

def test_cells_hand_computed_with_ties(toy):
    cells = _cells(toy, by_backbone=True)
    # (A, X), det:s0: positives {.9, .5}, negatives {.5, .5}: .9 beats both (2), .5 ties both (2 x 1/2).
    c = _cell(cells, "det:s0", "A", "X")
    assert (c.n_pos, c.n_neg) == (2, 2)
    assert c.auc == pytest.approx(3 / 4)
    # The train-split step of r4 (label 1, score 0.0) would have lowered it: it is not counted.
    # (A, X), det:s1: positives {.3, .8}, negatives {.8, .2}: .3 > .2 (1), .8 > .2 (1), .8 = .8 (1/2).
    assert _cell(cells, "det:s1", "A", "X").auc == pytest.approx(2.5 / 4)
    assert _cell(cells, "det:s0", "A", "Y").auc == pytest.approx(1.0)
    # Judge (resolved from its ranking): positives {4, 0}, negatives {2, 0} -> (2 + 1/2) / 4.
    assert _cell(cells, "judge:m", "A", "X").auc == pytest.approx(2.5 / 4)


def test_undefined_cell_is_blank_not_half(toy):
    cells = _cells(toy, by_backbone=True)
    # Backbone B, action X: one labeled test step (label 0); the unlabeled one is not counted.
    c = _cell(cells, "det:s0", "B", "X")
    assert (c.n_pos, c.n_neg) == (0, 1)
    assert pd.isna(c.auc)
    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    cell = grid.cells[(grid.cells.backbone == "B") & (grid.cells.action == "X") & (grid.cells.detector == "det · f")].iloc[0]
    assert math.isnan(cell.auc_mean)
    assert cell.reason == "no anomalies (positives) among the test steps"
    text, num, titles = dv.wide_grid(grid, "B")
    col = next(t for t, d in titles.items() if d == "det · f")
    row = text[text.action == "X"].iloc[0]
    assert row[col] == "— no positives (0+ / 1−)"
    assert "0.5" not in row[col]


def test_pooled_backbones(toy):
    cells = _cells(toy, by_backbone=False)
    # X over A and B: positives {.9, .5}, negatives {.5, .5, .1}: .9 beats 3; .5 beats .1, ties two.
    c = _cell(cells, "det:s0", dv.ALL_BACKBONES, "X")
    assert (c.n_pos, c.n_neg) == (2, 3)
    assert c.auc == pytest.approx(5 / 6)


def test_mean_std_over_seeds_and_grid_means(toy):
    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    c = grid.cells.set_index(["backbone", "action", "detector"]).loc[("A", "X", "det · f")]
    assert c.auc_mean == pytest.approx((0.75 + 0.625) / 2)
    assert c.auc_std == pytest.approx(abs(0.75 - 0.625) / math.sqrt(2))  # sample std, ddof=1
    assert (c.n_seeds, c.n_defined, c.n_pos, c.n_neg) == (2, 2, "2", "2")
    # Bottom row: mean over the detector's defined cells of backbone A (X and Y).
    y = grid.cells.set_index(["backbone", "action", "detector"]).loc[("A", "Y", "det · f")]
    bottom = grid.detector_means.set_index(["backbone", "detector"]).loc[("A", "det · f")]
    assert bottom["mean"] == pytest.approx((c.auc_mean + y.auc_mean) / 2)
    assert bottom["n_cells"] == 2
    # Right column: mean over the detectors with a defined cell for A/X.
    a_x = grid.cells[(grid.cells.backbone == "A") & (grid.cells.action == "X")]
    right = grid.action_means.set_index(["backbone", "action"]).loc[("A", "X")]
    assert right["mean"] == pytest.approx(a_x["auc_mean"].mean())
    assert right["n_cells"] == len(a_x)
    # Backbone B has no defined cell for anyone: no mean, said in the text.
    text, _, titles = dv.wide_grid(grid, "B")
    assert text.iloc[-1]["action"] == "mean over actions"
    assert all(text.iloc[-1][t] == "— no defined cell" for t in titles)


def test_grid_rows_carry_success_rate(toy):
    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    acts = grid.actions.set_index(["backbone", "action"])
    # A/X labeled steps: r1.0 (1), r1.2 (0), r2.0 (0), r2.2 (1), r4.0 (1): 2 of 5 succeed.
    assert acts.loc[("A", "X"), "labeled_steps"] == 5
    assert acts.loc[("A", "X"), "success_rate"] == pytest.approx(2 / 5)
    # B/X: one labeled (0), one unlabeled counted apart.
    assert acts.loc[("B", "X"), "unlabeled_steps"] == 1


def test_slice_restricts_the_grid(toy):
    cells = _cells(toy, by_backbone=False, slice_={"backbone": ["B"]})
    c = _cell(cells, "det:s0", dv.ALL_BACKBONES, "Y")
    assert (c.n_pos, c.n_neg) == (0, 1)


def test_cells_match_sklearn_on_random_data(tmp_path):
    """Random labels and coarse scores (many ties) over several backbones and actions."""
    rng = np.random.default_rng(7)
    runs, steps, preds = [], [], []
    for r in range(60):
        n = int(rng.integers(3, 9))
        run_id = f"rnd:{r}"
        runs.append({"run_id": run_id, "corpus": "rnd", "backbone": f"B{r % 3}", "outcome": "failure", "n_steps": n})
        for i in range(n):
            label = int(rng.random() < 0.3) if rng.random() > 0.1 else None
            steps.append({"run_id": run_id, "corpus": "rnd", "step_idx": i, "action": f"a{rng.integers(0, 4)}",
                          "label": label, "scope_success": bool(rng.random() < 0.5)})
            for s in range(2):
                preds.append({"set_id": f"set{s}", "corpus": "rnd", "run_id": run_id, "step_idx": i,
                              "score": float(np.round(rng.random() + 0.3 * (label or 0), 1)),
                              "split": "test" if rng.random() < 0.7 else "train"})
    sets = [{"set_id": f"set{s}", "corpus": "rnd", "method": "m", "granularity": "step", "seed": s, "origin": "rescore"}
            for s in range(2)]
    write_source(tmp_path, "rnd", {"runs": runs, "steps": steps, "prediction_sets": sets, "predictions": preds})
    got = dv.grid_cells(_query(tmp_path), {}, ["set0", "set1"], [f"B{i}" for i in range(3)],
                        [f"a{i}" for i in range(4)], by_backbone=True)
    frame = pd.DataFrame(preds).merge(pd.DataFrame(steps), on=["run_id", "step_idx"]).merge(
        pd.DataFrame(runs)[["run_id", "backbone"]], on="run_id")
    frame = frame[(frame.split == "test") & frame.label.notna()]
    checked = 0
    for (sid, bb, act), g in frame.groupby(["set_id", "backbone", "action"]):
        row = _cell(got, sid, bb, act)
        assert (row.n_pos, row.n_neg) == (int((g.label == 1).sum()), int((g.label == 0).sum()))
        if g.label.nunique() == 2:
            assert row.auc == pytest.approx(roc_auc_score(g.label.astype(int), g.score), abs=1e-12)
            checked += 1
        else:
            assert pd.isna(row.auc)
    assert checked >= 15
    assert len(got) == frame.groupby(["set_id", "backbone", "action"]).ngroups


# ----------------------------------------------------------------------------- errors of a cell

def test_false_positives_with_own_labels(toy):
    errors = dv.cell_errors(_query(toy), "det:s0", "A", "X", {}, threshold="own")
    fp = errors[errors.kind == "false positive"]
    # Label 0 and flagged by det:s0 in A/X: r1.2 (.5) and r2.0 (.5): ties ordered by run, step.
    assert list(zip(fp.run_id, fp.step_idx)) == [("toy:r1", 2), ("toy:r2", 0)]
    # Each listed step's native id and agent, read apart from the steps table.
    assert list(zip(fp.step_id, fp.agent)) == [("toy:r1#2", "agent-2"), ("toy:r2#0", "agent-0")]
    assert (errors.kind == "false negative").sum() == 0
    assert set(errors.threshold_used) == {"its own pred_label"}
    assert fp.explorer.iloc[0] == "/explorer?run=toy%3Ar1&step=2&set=det%3As0&rule=own"


def test_false_negatives_at_top_k(toy):
    # det:s1 has no decisions: its top 25% of 8 labeled test steps is k = 2, cut = 0.8 (the 2nd
    # highest), and both steps tied at 0.8 are flagged.
    errors = dv.cell_errors(_query(toy), "det:s1", "A", "X", {}, threshold="own", top_k=25)
    fp = errors[errors.kind == "false positive"]
    fn = errors[errors.kind == "false negative"]
    assert list(zip(fp.run_id, fp.step_idx)) == [("toy:r1", 2)]
    assert list(zip(fn.run_id, fn.step_idx, fn.score)) == [("toy:r1", 0, 0.3)]
    assert fp.n_in_cell.iloc[0] == 1
    assert errors.threshold_used.iloc[0] == "top 25% (score ≥ 0.8)"
    assert fp.explorer.iloc[0] == "/explorer?run=toy%3Ar1&step=2&set=det%3As1&threshold=0.8"  # the cut it used
    # All actions pooled: the false negatives in ascending score order.
    pooled = dv.cell_errors(_query(toy), "det:s1", dv.ALL_BACKBONES, dv.ALL_ACTIONS, {}, threshold="top_k", top_k=25)
    assert list(pooled[pooled.kind == "false negative"].score) == [0.3]


def test_forced_top_k_ignores_own_labels(toy):
    errors = dv.cell_errors(_query(toy), "det:s0", "A", "Y", {}, threshold="top_k", top_k=12.5)
    # k = 1 of 8: only r1.0 (0.9) is flagged; A/Y's positive r2.1 (0.7) is missed.
    fn = errors[errors.kind == "false negative"]
    assert list(zip(fn.run_id, fn.step_idx)) == [("toy:r2", 1)]


def test_bad_threshold_is_refused(toy):
    with pytest.raises(ValueError, match="top_k"):
        dv.cell_errors(_query(toy), "det:s0", "A", "X", {}, threshold="top_k", top_k=0)
    with pytest.raises(ValueError, match="threshold"):
        dv.check_threshold("median", 10)


# ----------------------------------------------------------------------------- overall comparison

def _labeled_test(set_id: str) -> pd.DataFrame:
    rows = [(r, i, lab, ok, s, own) for (r, i, _, lab, ok), s, own in zip(STEPS, SCORES[set_id], OWN_LABELS[set_id])
            if lab is not None and r != "toy:r4"]
    return pd.DataFrame(rows, columns=["run_id", "step_idx", "label", "scope_success", "score", "own"])


def test_overall_hand_computed_top_k(toy):
    overall = dv.compute_overall(_query(toy), CORPUS, {}, threshold="top_k", top_k=25)
    s1 = overall.per_set.set_index("set_id").loc["det:s1"]
    # Flagged: r2.1 (.9, label 1), r1.2 (.8, 0), r2.2 (.8, 1): TP 2, FP 1, FN 1 (r1.0), TN 4.
    assert (s1.tp, s1.fp, s1.fn, s1.tn) == (2, 1, 1, 4)
    assert s1.f1 == pytest.approx(4 / 6)
    assert s1.accuracy == pytest.approx(6 / 8)
    assert s1.balanced_accuracy == pytest.approx((2 / 3 + 4 / 5) / 2)
    # Silent anomaly r2.1 (scope succeeded) caught; loud ones r1.0 missed, r2.2 caught.
    assert (s1.silent_pos, s1.silent_recall, s1.loud_pos, s1.loud_recall) == (1, 1.0, 2, 0.5)
    # ROC-AUC over all 8: positives {.3, .9, .8} vs negatives {.6, .8, .2, .1, .4} -> 11.5 / 15.
    assert s1.auc == pytest.approx(11.5 / 15)
    assert (s1.n_steps, s1.n_runs) == (8, 3)


def test_overall_interval_of_a_detector_spans_its_seeds(toy):
    """det has two seeds: its line's 95% interval runs from the lower seed's low to the higher
    seed's high, each seed's being the run-clustered interval of its own labeled test steps."""
    from auditatlas.stats import clustered_auc

    overall = dv.compute_overall(_query(toy), CORPUS, {})
    refs = [clustered_auc(t.label.astype(int), t.score, t.run_id).ci95 for t in map(_labeled_test, ("det:s0", "det:s1"))]
    det = overall.per_detector.set_index("detector").loc["det · f"]
    assert (det.auc_ci_low, det.auc_ci_high) == pytest.approx((min(r[0] for r in refs), max(r[1] for r in refs)))
    assert det.auc_ci_of == "span of 2 seeds' intervals"


@pytest.mark.parametrize("threshold,top_k", [("own", 10.0), ("top_k", 25.0), ("top_k", 50.0), ("top_k", 100.0)])
def test_overall_matches_sklearn(toy, threshold, top_k):
    overall = dv.compute_overall(_query(toy), CORPUS, {}, threshold=threshold, top_k=top_k)
    for set_id in SCORES:
        truth = _labeled_test(set_id)
        if threshold == "own" and truth.own.notna().all():
            flag = truth.own.astype(int).to_numpy()
        else:
            k = math.ceil(top_k / 100 * len(truth))
            cut = np.sort(truth.score.to_numpy())[::-1][k - 1]
            flag = (truth.score >= cut).astype(int).to_numpy()
        row = overall.per_set.set_index("set_id").loc[set_id]
        y = truth.label.astype(int).to_numpy()
        assert row.f1 == pytest.approx(f1_score(y, flag))
        assert row.accuracy == pytest.approx(accuracy_score(y, flag))
        assert row.balanced_accuracy == pytest.approx(balanced_accuracy_score(y, flag))
        assert row.auc == pytest.approx(roc_auc_score(y, truth.score))


def test_overall_released_sets_and_granularity(toy):
    overall = dv.compute_overall(_query(toy), CORPUS, {}, threshold="own")
    names = set(overall.per_detector.detector)
    # Released step-level sets stand beside the re-scored detector; the run-level set does not fit.
    assert names == {"det · f", "xgboost", "llm_judge · all_at_once · m"}
    sets = dv.prediction_sets(_query(toy), CORPUS)
    run_level = sets.set_index("set_id").loc["runlevel"]
    assert not run_level.shown and "granularity run" in run_level.not_shown
    # No random set in this corpus: no baseline, said so, and no test is claimed.
    assert overall.baseline is None
    assert any("No random prediction set" in n for n in overall.notes)
    assert (overall.per_detector.vs_random_note == "no random baseline in this corpus").all()
    # The judge has no decisions and no split: it is thresholded at top-k over its 'all' rows.
    judge = overall.per_set.set_index("set_id").loc["judge:m"]
    assert judge.threshold_used.startswith("top 10%")
    assert judge.n_steps == 6  # r1 and r2 are judged; r3 has no ranking


# ----------------------------------------------------------------------------- test against random

def test_one_tailed_paired_t_hand_computed():
    # Differences 0.1, 0.2, 0.3: t = 0.2 / (0.1 / sqrt 3) = 2 sqrt 3 with 2 df, whose CDF is
    # 1/2 + t / (2 sqrt(t^2 + 2)); one-tailed p = 1/2 - t / (2 sqrt(t^2 + 2)).
    rnd = {0: 0.5, 1: 0.5, 2: 0.5}
    det = {0: 0.6, 1: 0.7, 2: 0.8}
    t = 2 * math.sqrt(3)
    res = dv.one_tailed_vs_random(det, rnd)
    assert res["test"] == "paired t-test (one-tailed)"
    assert res["p"] == pytest.approx(0.5 - t / (2 * math.sqrt(t * t + 2)))


def test_one_tailed_matches_scipy_and_falls_back():
    rng = np.random.default_rng(3)
    det = {s: 0.6 + 0.05 * rng.standard_normal() for s in range(5)}
    rnd = {s: 0.5 + 0.05 * rng.standard_normal() for s in range(5)}
    res = dv.one_tailed_vs_random(det, rnd)
    ref = stats.ttest_rel([det[s] for s in range(5)], [rnd[s] for s in range(5)], alternative="greater")
    assert res["p"] == pytest.approx(ref.pvalue)
    # Seeds that do not pair: Mann-Whitney U, one-tailed, exact.
    shifted = {s + 10: v for s, v in det.items()}
    res = dv.one_tailed_vs_random(shifted, rnd)
    ref = stats.mannwhitneyu(list(det.values()), list(rnd.values()), alternative="greater", method="exact")
    assert res["test"].startswith("Mann-Whitney") and res["p"] == pytest.approx(ref.pvalue)
    # Too few seeds: not possible, with the reason.
    res = dv.one_tailed_vs_random({0: 0.7, 1: 0.8}, rnd)
    assert math.isnan(res["p"]) and res["note"].startswith("not possible")
    # Identical differences: undefined, not a p of 0.
    res = dv.one_tailed_vs_random({0: 0.6, 1: 0.6, 2: 0.6}, {0: 0.5, 1: 0.5, 2: 0.5})
    assert math.isnan(res["p"]) and "do not vary" in res["note"]


def test_random_baseline_in_the_comparison(tmp_path):
    """Three seeds of a detector and of random on the same steps: the page's test is scipy's
    paired one-tailed t-test over the per-seed ROC-AUCs (each checked against sklearn)."""
    rng = np.random.default_rng(11)
    runs, steps, preds, sets = [], [], [], []
    labels = []
    for r in range(40):
        runs.append({"run_id": f"c:{r}", "corpus": "c", "backbone": "A", "outcome": "failure", "n_steps": 5})
        for i in range(5):
            lab = int(rng.random() < 0.3)
            labels.append(lab)
            steps.append({"run_id": f"c:{r}", "corpus": "c", "step_idx": i, "action": "X", "label": lab,
                          "scope_success": False})
    aucs = {}
    for method, shift in (("random", 0.0), ("iforest", 0.8)):
        for seed in range(3):
            sid = f"{method}:{seed}"
            sets.append({"set_id": sid, "corpus": "c", "method": method, "family": "random" if method == "random" else "tabular",
                         "supervision": "unsupervised", "granularity": "step", "seed": seed, "origin": "rescore"})
            scores = rng.standard_normal(len(labels)) + shift * np.array(labels)
            aucs[sid] = roc_auc_score(labels, scores)
            preds += [{"set_id": sid, "corpus": "c", "run_id": s["run_id"], "step_idx": s["step_idx"], "score": float(x),
                       "split": "test"} for s, x in zip(steps, scores)]
    write_source(tmp_path, "c", {"runs": runs, "steps": steps, "prediction_sets": sets, "predictions": preds})
    overall = dv.compute_overall(_query(tmp_path), "c", {}, threshold="top_k", top_k=30)
    assert overall.baseline == "random"
    per = overall.per_detector.set_index("detector")
    assert per.index[0] == "random"  # the baseline leads the table
    ref = stats.ttest_rel([aucs[f"iforest:{s}"] for s in range(3)], [aucs[f"random:{s}"] for s in range(3)],
                          alternative="greater")
    name = "iforest"  # no feature set: the detector is the method alone
    assert per.loc[name, "vs_random_p"] == pytest.approx(ref.pvalue)
    assert per.loc[name, "auc_mean"] == pytest.approx(np.mean([aucs[f"iforest:{s}"] for s in range(3)]))
    assert per.loc[name, "auc_std"] == pytest.approx(np.std([aucs[f"iforest:{s}"] for s in range(3)], ddof=1))
    assert per.loc["random", "vs_random_note"] == "the random baseline itself"
    assert per.loc[name, "test_steps"] == "200" and per.loc[name, "test_runs"] == "40"


# ----------------------------------------------------------------------------- cost

def test_cost_from_provenance_and_blank_for_released(toy):
    overall = dv.compute_overall(_query(toy), CORPUS, {})
    cost = dv.cost_table(overall).set_index("detector")
    det = cost.loc["det · f"]
    # Seeds 0 and 1: fit 2.0 / 3.0 + score 0.5 each -> mean 3.0 s; memory 100 / 110 -> 105 MB.
    assert det.seconds_mean == pytest.approx(3.0)
    assert det.peak_memory_mb_mean == pytest.approx(105.0)
    assert det.reason == ""
    xgb = cost.loc["xgboost"]
    assert math.isnan(xgb.seconds_mean) and xgb.reason == "released set: no time and memory recorded"
    # Invalid params JSON is read defensively (NULL provenance), never an error.
    assert cost.loc["llm_judge · all_at_once · m"].reason.startswith("released set")


def test_provenance_nested_and_missing(tmp_path):
    tables = _toy_tables()
    tables["prediction_sets"] = [
        {**s, "params": json.dumps({"provenance": {"fit_seconds": 1, "score_seconds": 2, "peak_memory_mb": 3}})}
        if s["set_id"] == "det:s0" else ({**s, "params": json.dumps({"n_estimators": 10})} if s["set_id"] == "det:s1" else s)
        for s in tables["prediction_sets"]]
    write_source(tmp_path, "fixture", tables)
    sets = dv.prediction_sets(_query(tmp_path), CORPUS).set_index("set_id")
    assert (sets.loc["det:s0", "fit_seconds"], sets.loc["det:s0", "peak_memory_mb"]) == (1.0, 3.0)
    assert pd.isna(sets.loc["det:s1", "fit_seconds"])


def test_explorer_link_encodes_ids():
    from auditatlas.views import explorer_url

    assert explorer_url("whowhen:Algorithm-Generated/1", 3, "a&b") == \
        "/explorer?run=whowhen%3AAlgorithm-Generated%2F1&step=3&set=a%26b"


def test_grid_says_what_it_rests_on(toy):
    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    # det:s0/s1: 8 labeled test steps (3 anomalies) of r1-r3; csv:xgb: 9 (4) of r1-r4 (all its
    # rows are test); the judge: 6 (3) of r1-r2.
    assert grid.rests_on() == "6–9 labeled test steps (3–4 anomalies) of 2–4 runs per prediction set"


def test_partly_defined_cell_averages_the_defined_seeds():
    per_set = pd.DataFrame([
        {"set_id": "a", "backbone": "A", "action": "X", "n_pos": 2, "n_neg": 3, "auc": 0.8},
        {"set_id": "b", "backbone": "A", "action": "X", "n_pos": 0, "n_neg": 4, "auc": None},
    ])
    sets = pd.DataFrame({"set_id": ["a", "b"], "detector": ["d", "d"]})
    cell = dv.aggregate_cells(per_set, sets).iloc[0]
    assert cell.auc_mean == 0.8 and math.isnan(cell.auc_std)
    assert (cell.n_seeds, cell.n_defined, cell.n_pos, cell.n_neg) == (2, 1, "0–2", "3–4")
    assert cell.reason.startswith("1 of 2 seeds undefined")


# ----------------------------------------------------------------------------- derived tables, ranked twins

IDS = ["det:s0", "det:s1", "csv:xgb", "judge:m"]


def _views_on(root: Path, by_backbone: bool, slice_=None, threshold="top_k", top_k=30.0):
    cells = _cells(root, by_backbone=by_backbone, slice_=slice_).sort_values(["set_id", "backbone", "action"])
    pooled = _cells(root, by_backbone=by_backbone, by_action=False, slice_=slice_)
    q = _query(root)
    coverage = q("detector_coverage", {"slice": slice_ or {}, "set_ids": IDS})
    overall = q("detector_overall", {"slice": slice_ or {}, "set_ids": IDS, "threshold": threshold, "top_k": top_k})
    errors = [q("grid_errors", {"slice": slice_ or {}, "set_id": sid, "cell_backbone": b, "cell_action": a,
                                "threshold": threshold, "top_k": top_k, "limit": 20})
              for sid in IDS for b in ("A", "(all backbones)") for a in ("X", "(all actions)")]
    acts = q("grid_actions", {"slice": slice_ or {}, "target_corpus": CORPUS, "by_backbone": by_backbone})
    return [cells.reset_index(drop=True), pooled, coverage, overall, *errors, acts]


@pytest.fixture
def chosen(monkeypatch):
    """The query texts queries.run executes, by name."""
    names: list[str] = []
    prepare = queries.named.prepare

    def spy(query, params):
        names.append(query.name)
        return prepare(query, params)

    monkeypatch.setattr(queries.named, "prepare", spy)
    return names


SLICES = [None, {"corpus": [CORPUS]}, {"corpus": ["elsewhere"]}, {"backbone": ["A"]}, {"backbone": ["A", "B"], "outcome": ["success"]},
          {"difficulty": ["easy"]}]


THRESHOLDS = [("top_k", 30.0), ("own", 10.0), ("top_k", 1.0)]
# Every threshold on the slices that keep every stored group whole (there the overall and error
# views read the ranked twins, whose answer depends on the threshold); one threshold each,
# taken in turn, on the slices where only the per-cell views can use a twin. The full cross
# (18 cases, about 1,500 queries) cost 48 CPU-seconds for no case this one misses.
TWIN_CASES = ([(s, *t) for s in SLICES[:2] for t in THRESHOLDS]
              + [(s, *THRESHOLDS[i % len(THRESHOLDS)]) for i, s in enumerate(SLICES[2:])])


@pytest.mark.parametrize("slice_,threshold,top_k", TWIN_CASES)
def test_ranked_twins_answer_like_the_live_queries(toy, monkeypatch, slice_, threshold, top_k):
    """Where the slice keeps the stored groups whole the views read the derived tables (ranks,
    counts, the step cube); elsewhere, and with the twins switched off, the queries over the
    steps and predictions. Both must give the same rows."""
    for by_backbone in (True, False):
        stored = _views_on(toy, by_backbone, slice_, threshold, top_k)
        with monkeypatch.context() as m:
            m.setattr(queries.twins, "TWINS", {})
            live = _views_on(toy, by_backbone, slice_, threshold, top_k)
        for a, b in zip(live, stored):
            pd.testing.assert_frame_equal(a, b)


def test_twins_are_used_where_the_slice_keeps_groups_whole(toy, chosen):
    _views_on(toy, True)
    assert {"grid_cells_ranked", "detector_coverage_ranked", "detector_overall_ranked", "grid_errors_ranked"} <= set(chosen)
    chosen.clear()
    _views_on(toy, True, {"backbone": ["A"]})
    # Per-backbone cells (per action or pooled over actions) and coverage keep their groups;
    # overall and errors (the threshold is over all the set's steps) do not.
    assert chosen.count("grid_cells_ranked") == 2 and "detector_coverage_ranked" in chosen
    assert "detector_overall_ranked" not in chosen and "grid_errors_ranked" not in chosen
    chosen.clear()
    _views_on(toy, False, {"backbone": ["A"]})
    assert "grid_cells" in chosen and "grid_cells_ranked" not in chosen  # pooled over backbones
    chosen.clear()
    _views_on(toy, True, {"outcome": ["success"]})
    assert not [n for n in chosen if n.endswith("_ranked")]
    assert "grid_actions_cube" in chosen  # counts per slice cell: any slice takes whole rows


def test_stored_ranks_hand_computed(toy):
    """det:s0's labeled test steps score 0.9 0.2 0.5 0.5 0.7 0.5 0.1 0.4 (r4 is train, r3's
    third step unlabeled): within the set, 0.5 holds ranks 4-6 (mid 5, highest 6)."""
    folder = queries.database.for_store(toy).derived
    assert folder, "the derived tables were not built"
    got = queries.connect(toy).execute(
        f"SELECT score, set_mid2, set_high FROM read_parquet('{folder}/test_scores.parquet') "
        "WHERE set_id = 'det:s0' ORDER BY score").fetchall()
    assert got == [(0.1, 2, 1), (0.2, 4, 2), (0.4, 6, 3), (0.5, 10, 6), (0.5, 10, 6), (0.5, 10, 6),
                   (0.7, 14, 7), (0.9, 16, 8)]
    # Within (det:s0, backbone A, action X): r1/0 0.9, r1/2 0.5, r2/0 0.5, r2/2 0.5 -> ranks 2 (x3), 4.
    cell = queries.connect(toy).execute(
        f"SELECT score, cell_mid2 FROM read_parquet('{folder}/test_scores.parquet') "
        "WHERE set_id = 'det:s0' AND backbone = 'A' AND action = 'X' ORDER BY score").fetchall()
    assert cell == [(0.5, 4), (0.5, 4), (0.5, 4), (0.9, 8)]
    sets = queries.connect(toy).execute(
        f"SELECT backbone, n_steps, n_pos, n_decided, n_runs FROM read_parquet('{folder}/test_sets.parquet') "
        "WHERE set_id = 'det:s0' ORDER BY backbone").fetchall()
    assert sets == [("A", 6, 3, 6, 2), ("B", 2, 0, 2, 1)]


def test_failed_build_leaves_the_live_queries(tmp_path, monkeypatch, caplog):
    root = tmp_path / "store"
    write_source(root, "fixture", _toy_tables())

    def broken(*_args, **_kw):
        raise OSError("No space left on device")

    monkeypatch.setattr(queries.derived, "build", broken)
    assert queries.warm(root) is False
    assert "not built" in caplog.text
    monkeypatch.undo()
    # This store version stays on the live queries; same answers as a store whose derived tables were built.
    other = tmp_path / "other"
    write_source(other, "fixture", _toy_tables())
    for a, b in zip(_views_on(root, True), _views_on(other, True)):
        pd.testing.assert_frame_equal(a, b)


def test_slice_value_missing_from_the_store_gives_empty_views(toy):
    cells, _, coverage, overall, *_ = _views_on(toy, True, {"backbone": ["C"]})
    assert cells.empty and coverage.empty and overall.empty
    cells, _, coverage, _, *_ = _views_on(toy, True, {"backbone": ["C", "B"]})
    assert set(cells.backbone) == {"B"} and (coverage.n_runs == 1).all()


def test_new_store_version_rebuilds_the_derived_tables(tmp_path, monkeypatch):
    root = tmp_path / "store"
    write_source(root, "fixture", _toy_tables())
    q = _query(root)
    before = q("detector_coverage", {"slice": {}, "set_ids": ["det:s0", "extra:s"]})
    assert list(before.set_id) == ["det:s0"]
    first = queries.database.for_store(root).derived
    extra = {"prediction_sets": [{"set_id": "extra:s", "corpus": CORPUS, "method": "extra", "granularity": "step",
                                  "origin": "rescore"}],
             "predictions": [{"set_id": "extra:s", "corpus": CORPUS, "run_id": "toy:r3", "step_idx": i,
                              "score": float(i), "split": "test"} for i in range(3)]}
    write_source(root, "extra", extra)
    monkeypatch.setattr(queries.derived, "STALE_AFTER_S", 0.0)
    after = q("detector_coverage", {"slice": {}, "set_ids": ["det:s0", "extra:s"]})
    # r3's steps 0 and 1 are labeled (step 2 is not): two scored test steps of one run.
    assert after[after.set_id == "extra:s"][["n_steps", "n_pos", "n_runs"]].values.tolist() == [[2, 0, 1]]
    second = queries.database.for_store(root).derived
    assert second != first and second.is_dir() and not first.exists()  # the old build was removed
    assert [p.name for p in (root / "derived").iterdir()] == [second.name]
    sets = q("detector_sets", {"corpus": CORPUS})
    assert sets.set_index("set_id").loc["extra:s", "n_test_predictions"] == 3


def test_a_click_on_a_heatmap_cell_names_its_backbone_action_and_detector(toy):
    """The AUROC heatmap opens its cell on click, as the table does: every cell of every panel
    (the grey layer's and the scores') carries its backbone, action and detector."""
    from auditatlas.figures.detectors import heatmap_cell, heatmaps

    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    backbones = list(grid.backbones)
    fig = heatmaps(grid, backbones)
    dets = list(grid.detectors["detector"])
    assert len(fig.data) == 4 * len(backbones)  # per panel: the grey layer, the scores, the veil, the clickable layer
    for panel, backbone in enumerate(backbones):
        actions = list(grid.actions.loc[grid.actions["backbone"] == backbone, "action"])
        clickable = fig.data[4 * panel + 3]
        assert len(clickable.customdata) == len(actions) * len(dets)  # every cell, defined or grey
        for k, (x, y, data) in enumerate(zip(clickable.x, clickable.y, clickable.customdata)):
            row, column = divmod(k, len(dets))
            assert (x, y) == (column, fig.data[4 * panel + 1].y[row])  # drawn over its own cell
            assert heatmap_cell({"customdata": list(data)}) == (backbone, actions[row], dets[column])
    assert heatmap_cell({"x": 0, "y": "SOLVE_CLUE"}) is None and heatmap_cell({"customdata": "text"}) is None


def test_heatmap_cells_on_few_steps_are_pale_and_hovers_wrap(toy):
    """A cell resting on fewer than 10 positives or negatives is veiled (its value still drawn);
    a hover is short lines, never one line running off the chart; side by side, panels wrap so a
    detector's column keeps 34 px on a 900 px page."""
    from auditatlas.figures.detectors import heatmaps, panels_per_row

    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    backbones = list(grid.backbones)
    fig = heatmaps(grid, backbones)
    dets = list(grid.detectors["detector"])
    for panel, backbone in enumerate(backbones):
        actions = list(grid.actions.loc[grid.actions["backbone"] == backbone, "action"])
        veil = fig.data[4 * panel + 2].z
        cells = grid.cells[grid.cells["backbone"] == backbone].set_index(["action", "detector"])
        for i, action in enumerate(actions):
            for j, det in enumerate(dets):
                c = cells.loc[(action, det)] if (action, det) in cells.index else None
                few = c is not None and c["auc_mean"] == c["auc_mean"] and min(c["n_pos_min"], c["n_neg_min"]) < 10
                assert (veil[i][j] == 1.0) == few, (action, det)
        for data in fig.data[4 * panel + 3].customdata:
            assert all(len(line) <= 80 for line in data[3].split("<br>")), data[3]
    assert [panels_per_row(n) for n in (3, 5, 11, 16, 40)] == [3, 3, 2, 1, 1]


@pytest.mark.parametrize("few_below", [10, 1])
def test_table_cells_on_few_steps_are_pale_as_the_heatmaps_veil_them(toy, few_below, monkeypatch):
    """The grid's table, which is the whole grid of one backbone on screen, veils the same cells
    the heatmaps do: a full colour on many positives and negatives, the colour seen through the
    62 % white veil on few. The toy's cells all rest on few (under 10); with 'few' taken as under
    1, none does."""
    from auditatlas.figures import detectors as figs
    from auditatlas.views.detectors_view import grid_table

    monkeypatch.setattr(figs, "SMALL_N", few_below)
    grid = dv.compute_grid(_query(toy), CORPUS, {}, by_backbone=True)
    seen = {True: 0, False: 0}
    for backbone in grid.backbones:
        table, num, titles = grid_table(grid, CORPUS, backbone)
        cells = grid.cells[grid.cells["backbone"] == backbone].set_index(["action", "detector"])
        for row, action in enumerate(num["action"].iloc[:-1]):
            for title, det in titles.items():
                c = cells.loc[(action, det)] if (action, det) in cells.index else None
                if c is None or c["auc_mean"] != c["auc_mean"]:
                    assert table.styles[title].iloc[row] == "", (action, det)
                    continue
                few = min(c["n_pos_min"], c["n_neg_min"]) < few_below
                seen[few] += 1
                rgb = [int(v) for v in re.findall(r"\d+", table.styles[title].iloc[row])]
                # Through the veil no channel is below 0.62 * 255; in full colour, a value outside
                # 0.35-0.65 has one below it (the scale's ends are 178,24,43 and 26,152,80).
                if few:
                    assert min(rgb) >= 158, (action, det, rgb)
                elif not 0.35 < c["auc_mean"] < 0.65:
                    assert min(rgb) < 158, (action, det, rgb)
    assert seen[few_below > 1] and not seen[few_below == 1]
    # The scale's red end through the veil: 0.62 * 255 + 0.38 * (178, 24, 43).
    assert figs.auc_color(0.0, pale=True) == "background-color: rgb(226, 167, 174)"
    assert figs.auc_color(0.0) == "background-color: rgb(178, 24, 43); color: white"  # white on a dark cell


@pytest.mark.parametrize("cell, rule, top_k", [(("det:s0", "A", "X"), "own", 10.0), (("det:s1", "A", "X"), "own", 25)])
def test_an_error_followed_into_the_explorer_keeps_its_verdict(toy, cell, rule, top_k):
    """A false positive listed by the set's own decisions (or its top share's cut) opens in the
    Explorer flagged by the same rule, so it is a false positive there too (it once opened as
    'top 1 of the run' and read TN), and a false negative stays a miss."""
    from auditatlas.views import explorer_view
    from auditatlas.views.app_link import parse_link

    errors = dv.cell_errors(_query(toy), *cell, {}, threshold=rule, top_k=top_k)
    assert len(errors)
    for row in errors.itertuples(index=False):
        link = parse_link(row.explorer)
        assert link.problems == []
        run = explorer_view.run_graph(_query(toy), row.run_id, "released", link.values["set"],
                                      explorer_view.rule_of(link.values), "scope")
        expected = "FP" if row.kind == "false positive" else "FN"
        assert run.g.nodes[int(row.step_idx)]["outcome"] == expected, (row.run_id, row.step_idx, row.explorer)
