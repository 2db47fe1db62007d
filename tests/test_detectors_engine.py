"""Detector registry, step features, splits, metrics and the scoring engine (in-process and Dask).

Expected values come from hand-worked fixtures, scikit-learn, or DuckDB queries over the
store written independently of the engine's own bookkeeping.
"""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score, roc_auc_score

import queries
from auditatlas.detectors import engine, jobs, panel, registry
from auditatlas.detectors.features import step_features
from auditatlas.detectors.metrics import summarize
from auditatlas.detectors.splits import group_split, run_groups
from auditatlas.errors import AtlasError, UndefinedMetric
from auditatlas.stats import roc_auc
from auditatlas.store import read_manifest, write_source
from cli_support import run_cli
from conftest import REPO

VENV_BIN = Path(sys.executable).parent


# ------------------------------------------------------------------------------- fixtures

def _run(name: str, backbone: str, room: str | None, n: int, outcome: str = "failure") -> dict:
    return {"run_id": f"toy:{name}", "corpus": "toy", "backbone": backbone, "difficulty": "easy", "task_id": "t1",
            "room_id": room, "outcome": outcome, "n_steps": n, "temperature": 0.0, "domain": "d"}


def _step(run: str, idx: int, action: str, agent: str, label, **kw) -> dict:
    return {"run_id": f"toy:{run}", "corpus": "toy", "step_idx": idx, "action": action, "agent": agent, "label": label,
            **kw}


def _toy_tables() -> dict:
    """Nine runs in five rooms (two backbones A and B, plus backbone C whose steps are all normal).

    Run r0 is the hand-worked one (features checked below); the other runs alternate labels so
    every room has anomalous and normal steps, and r8 (backbone C) has no anomaly at all.
    """
    runs = [_run("r0", "A", "room_0", 4), _run("r1", "B", "room_0", 4), _run("r2", "A", "room_1", 4),
            _run("r3", "B", "room_1", 4), _run("r4", "A", "room_2", 4), _run("r5", "B", "room_2", 4),
            _run("r6", "A", "room_3", 4), _run("r7", "B", "room_3", 4), _run("r8", "C", "room_4", 3, "success")]
    steps = [
        _step("r0", 0, "OBSERVE", "a1", 0, tokens_in=10, tokens_out=5, duration_s=1.0, confidence=0.9, is_tool=False),
        _step("r0", 1, "SOLVE", "a2", 1, is_tool=True),
        _step("r0", 2, "OBSERVE", "a1", None),
        _step("r0", 3, "APPLY", "a2", 0, tokens_in=3, tokens_out=7, duration_s=0.5),
    ]
    edges = [
        {"run_id": "toy:r0", "corpus": "toy", "src_idx": 0, "dst_idx": 1, "kind": "data", "provenance": "observed"},
        {"run_id": "toy:r0", "corpus": "toy", "src_idx": 0, "dst_idx": 1, "kind": "context", "provenance": "inferred"},
        {"run_id": "toy:r0", "corpus": "toy", "src_idx": 0, "dst_idx": 2, "kind": "data", "provenance": "observed"},
        {"run_id": "toy:r0", "corpus": "toy", "src_idx": 1, "dst_idx": 3, "kind": "data", "provenance": "observed"},
        {"run_id": "toy:r0", "corpus": "toy", "src_idx": 0, "dst_idx": 3, "kind": "data", "provenance": "observed"},
    ]
    rng = np.random.default_rng(3)
    for k in range(1, 8):
        for i, action in enumerate(("OBSERVE", "SOLVE", "OBSERVE", "APPLY")):
            label = None if (k, i) == (3, 2) else int((k + i) % 3 == 0)
            steps.append(_step(f"r{k}", i, action, "a1" if action == "OBSERVE" else "a2", label,
                               tokens_in=int(rng.integers(5, 50)) + 40 * (label or 0), tokens_out=int(rng.integers(5, 50)),
                               duration_s=float(rng.uniform(0.1, 3)), confidence=float(rng.uniform(0.5, 1))))
            if i:
                edges.append({"run_id": f"toy:r{k}", "corpus": "toy", "src_idx": i - 1, "dst_idx": i, "kind": "data",
                              "provenance": "observed"})
    for i in range(3):
        steps.append(_step("r8", i, "OBSERVE", "a1", 0, tokens_in=9, tokens_out=9))
    corpora = [{"corpus": "toy", "title": "Toy", "kind": "simulated", "label_process": "authored", "description": "toy"}]
    return {"corpora": corpora, "runs": runs, "steps": steps, "edges": edges}


@pytest.fixture()
def toy(tmp_path) -> Path:
    root = tmp_path / "toy-store"
    write_source(root, "toy", _toy_tables())
    return root


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    """300 simulated rooms (about 2,800 steps, five backbones) plus an unrelated source: a copy
    of the session's demo-300-s0 build (tests/stores.py; 11 CPU-s per worker built here)."""
    from stores import copy_of

    root = copy_of("demo-300-s0", tmp_path_factory.mktemp("sim-store") / "store")
    write_source(root, "toy", _toy_tables())
    return root


def _con(root: Path):
    from queries import connect

    return connect(root)


def _source_rows(root: Path) -> dict[str, dict[str, int]]:
    """Rows per table of every source, counted from its Parquet files (not the manifest)."""
    manifest = read_manifest(root)
    out = {}
    for name, entry in manifest["sources"].items():
        folder = root / entry["dir"]
        out[name] = {t.name: ds.dataset(str(t), format="parquet").count_rows() for t in sorted(folder.iterdir()) if t.is_dir()}
    return out


# ------------------------------------------------------------------------------- metrics

def test_roc_auc_matches_sklearn_on_random_data_with_ties():
    rng = np.random.default_rng(0)
    for _trial in range(20):
        y = rng.integers(0, 2, 200)
        s = np.round(rng.normal(size=200) + 0.5 * y, 1)  # rounding makes many ties
        assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_roc_auc_hand_worked():
    # Pairs (pos, neg): (0.35, 0.1) win, (0.35, 0.4) loss, (0.8, 0.1) win, (0.8, 0.4) win -> 3/4.
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
    # One tie among the four pairs counts one half: (1 + 0.5 + 1 + 1) / 4.
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.4, 0.8]) == 0.875


def test_undefined_roc_auc_is_never_one_half():
    with pytest.raises(UndefinedMetric):
        roc_auc([1, 1, 1], [0.2, 0.5, 0.9])
    with pytest.raises(UndefinedMetric):
        roc_auc([0, 0], [0.2, 0.5])
    summary = summarize([0, 0, 0], [0.1, 0.2, 0.3], [0, 1, 0])
    assert summary.roc_auc is None and "roc_auc" in summary.notes
    assert summary.balanced_accuracy is None
    assert summary.accuracy == pytest.approx(2 / 3)


def test_thresholded_metrics_match_sklearn():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    pred = (rng.random(300) < 0.3).astype(int)
    s = rng.random(300)
    got = summarize(y, s, pred)
    assert got.f1 == pytest.approx(f1_score(y, pred))
    assert got.accuracy == pytest.approx(accuracy_score(y, pred))
    assert got.balanced_accuracy == pytest.approx(balanced_accuracy_score(y, pred))
    assert (got.n_pos, got.n_neg) == (int(y.sum()), int((1 - y).sum()))


# ------------------------------------------------------------------------------- registry

def test_registry_has_the_required_detectors_and_one_interface():
    names = set(registry.engine_detectors())
    assert {"random", "iforest", "knn", "lof", "ecod", "copod", "hbos", "ocsvm", "logreg", "random-forest",
            "hist-gb"} <= names
    for name in names:
        d = registry.get(name)
        assert d.supervision in registry.SUPERVISIONS and d.family in registry.FAMILIES
        est = d.make(0)
        assert all(hasattr(est, m) for m in ("fit", "decision_function", "predict", "get_params")), name
    with pytest.raises(AtlasError, match="unknown detector"):
        registry.get("no-such-detector")


def test_training_rows_are_the_registry_entrys_rule():
    """Hand-worked: 6 steps, the first 4 on the training side; labels 0, 1, NaN, 0 there."""
    train = np.array([True, True, True, True, False, False])
    label = np.array([0.0, 1.0, np.nan, 0.0, 1.0, 0.0])
    unsupervised = registry.get("hbos").training_rows(train, label, 0)
    np.testing.assert_array_equal(unsupervised.rows, [0, 1, 2, 3])
    assert unsupervised.y is None and unsupervised.problem is None
    assert unsupervised.described == "training steps (labels unused)"
    one_class = registry.get("ocsvm").training_rows(train, label, 0)
    np.testing.assert_array_equal(one_class.rows, [0, 3])
    assert one_class.y is None and one_class.described == "normal training steps"
    supervised = registry.get("logreg").training_rows(train, label, 0)
    np.testing.assert_array_equal(supervised.rows, [0, 1, 3])  # the NaN label is left out
    np.testing.assert_array_equal(supervised.y, [0, 1, 0])
    assert supervised.problem is None
    # Training steps of one class: a supervised fit is refused, an unsupervised one is not.
    normal_only = np.array([0.0, 0.0, np.nan, 0.0, 1.0, 0.0])
    assert "no anomalous labeled step" in registry.get("logreg").training_rows(train, normal_only, 0).problem
    assert registry.get("hbos").training_rows(train, normal_only, 0).problem is None
    one_normal = np.array([0.0, 1.0, np.nan, 1.0, 1.0, 0.0])  # one normal step on the training side
    assert "holds 1 usable step" in registry.get("ocsvm").training_rows(train, one_normal, 0).problem


def test_training_rows_subsample_is_seeded_and_capped():
    knn = registry.get("knn")  # capped at SMALL_FIT rows
    n = knn.max_train + 500
    train, label = np.ones(n, dtype=bool), np.zeros(n)
    a, b, c = (knn.training_rows(train, label, seed) for seed in (0, 0, 1))
    assert len(a.rows) == knn.max_train and np.all(np.diff(a.rows) > 0)
    np.testing.assert_array_equal(a.rows, b.rows)
    assert not np.array_equal(a.rows, c.rows)
    assert a.described.endswith(f"seeded subsample of {knn.max_train:,}")


def test_every_detector_scores_planted_anomalies_higher():
    """Higher score = more anomalous: far-off rows (and, for supervised ones, labeled rows) score
    above the bulk. Random is the floor and must not separate them systematically."""
    rng = np.random.default_rng(7)
    normal = rng.normal(0, 1, size=(400, 5))
    # Scattered, not clustered: a tight cluster of 20 outliers is dense to LOF's 20 neighbours.
    direction = np.abs(rng.normal(size=(20, 5)))  # one orthant: a linear model can separate them too
    odd = 8 * direction / np.linalg.norm(direction, axis=1, keepdims=True)
    X = np.vstack([normal, odd]).astype(np.float32)
    y = np.r_[np.zeros(400, int), np.ones(20, int)]
    for name in registry.engine_detectors():
        d = registry.get(name)
        if d.supervision == "supervised":
            fit_rows, fit_y = np.arange(len(X)), y
        elif d.supervision == "one-class":
            fit_rows, fit_y = np.flatnonzero(y == 0), None
        else:
            fit_rows, fit_y = np.arange(len(X)), None
        fitted = jobs.fit_job(name, 0, X, fit_rows, fit_y)
        scored = jobs.score_job(fitted, X, 0, len(X))
        auc = roc_auc_score(y, scored.scores)
        if name == "random":
            assert 0.3 < auc < 0.7
        else:
            assert auc > 0.95, (name, auc)
        assert set(np.unique(scored.labels)) <= {0, 1}


@pytest.mark.parametrize("method", ["ecod", "copod"])
def test_ecod_and_copod_score_a_row_as_pyod_scores_it_alone_in_any_batch(method):
    """The registry's ECOD and COPOD: the fitted rows' scores and threshold are PyOD's own; a new
    row's score is PyOD's for a batch of that row alone, whatever batch it comes in. PyOD's
    own scoring of the same rows moves with the batch (it ranks the batch with the training rows),
    which split a corpus's scores by the engine's chunks."""
    from pyod.models.copod import COPOD
    from pyod.models.ecod import ECOD

    pyod_class = {"ecod": ECOD, "copod": COPOD}[method]
    rng = np.random.default_rng(7)
    # Clearly skewed columns (ties among the counts), so one row more cannot turn a column's
    # skewness (PyOD's batch of one ranks the row with the training rows, skewness included).
    train = np.column_stack([rng.exponential(size=400), -rng.exponential(size=400), rng.poisson(1.0, 400),
                             rng.gamma(2.0, size=400)])
    new = np.column_stack([rng.exponential(size=50) * 1.5, -rng.exponential(size=50), rng.poisson(2.0, 50),
                           rng.gamma(2.0, size=50) * 2])
    ours = registry.get(method).make(0).fit(train)
    theirs = pyod_class(contamination=0.1).fit(train)
    assert np.array_equal(ours.decision_scores_, theirs.decision_scores_)
    assert ours.threshold_ == theirs.threshold_
    alone = np.array([pyod_class(contamination=0.1).fit(train).decision_function(new[i:i + 1])[0]
                      for i in range(len(new))])
    np.testing.assert_allclose(ours.decision_function(new), alone, rtol=1e-12, atol=1e-12)
    split = np.concatenate([ours.decision_function(new[:9]), ours.decision_function(new[9:])])
    assert np.array_equal(split, ours.decision_function(new))
    theirs_split = np.concatenate([theirs.decision_function(new[:9]), theirs.decision_function(new[9:])])
    assert not np.allclose(theirs_split, theirs.decision_function(new))
    assert np.array_equal(ours.predict(new), (ours.decision_function(new) > theirs.threshold_).astype(np.int8))


def test_board_entrants_are_declared_in_board_order_on_registry_detectors():
    """The run-level boards' entrants, in the published order (specs/catchbench.md), each scored
    by a detector of this registry; the random floor and the size baseline carry their roles."""
    from auditatlas.analyses.board_detection import LIVE_BOARD, POST_BOARD

    POST_ENTRANTS, LIVE_ENTRANTS = POST_BOARD.entrants, LIVE_BOARD.entrants

    assert [e.name for e in POST_ENTRANTS] == [
        "random", "size (flat)", "pyod-flatten (ECOD)", "auditable (size+deps)", "full"]
    assert [e.name for e in LIVE_ENTRANTS] == [
        "random", "size (flat)", "auditable (size+deps)", "full", "pyod (ECOD)", "dep-span (online)"]
    for entrant in POST_ENTRANTS + LIVE_ENTRANTS:
        assert entrant.scorer.detector in registry.registry()
        expected = {"random": "floor", "size (flat)": "baseline"}.get(entrant.name, "entrant")
        assert entrant.role == expected, entrant


# ------------------------------------------------------------------------------- features

@pytest.mark.parametrize("chunk_runs", [100_000, 1, 2], ids=["one read", "a run at a time", "two runs at a time"])
def test_step_features_hand_worked(toy, chunk_runs):
    f = step_features(queries.runner(toy), "toy", {}, chunk_runs=chunk_runs)
    col = {c: i for i, c in enumerate(f.columns)}
    r0 = f.run_pos == 0
    assert f.runs["run_id"].iloc[0] == "toy:r0"
    X = f.X[r0]
    assert list(f.step_idx[r0]) == [0, 1, 2, 3]
    np.testing.assert_array_equal(f.label[r0][[0, 1, 3]], [0, 1, 0])
    assert np.isnan(f.label[r0][2])  # unlabeled stays unlabeled
    np.testing.assert_allclose(X[:, col["position_frac"]], [0, 1 / 3, 2 / 3, 1], rtol=1e-6)
    np.testing.assert_array_equal(X[:, col["run_steps"]], [4, 4, 4, 4])
    # Edges (0,1) twice, (0,2), (1,3), (0,3): de-duplicated degrees and spans.
    np.testing.assert_array_equal(X[:, col["dep_in"]], [0, 1, 1, 2])
    np.testing.assert_array_equal(X[:, col["dep_out"]], [3, 1, 0, 0])
    np.testing.assert_array_equal(X[:, col["span_in_max"]], [0, 1, 2, 3])
    np.testing.assert_array_equal(X[:, col["span_in_mean"]], [0, 1, 2, 2.5])
    np.testing.assert_array_equal(X[:, col["span_out_max"]], [3, 2, 0, 0])
    np.testing.assert_allclose(X[:, col["log_tokens_in"]], [math.log(11), 0, 0, math.log(4)], rtol=1e-6)
    np.testing.assert_array_equal(X[:, col["has_tokens"]], [1, 0, 0, 1])
    np.testing.assert_allclose(X[:, col["confidence"]], [0.9, 0, 0, 0], rtol=1e-6)
    np.testing.assert_array_equal(X[:, col["has_confidence"]], [1, 0, 0, 0])
    np.testing.assert_array_equal(X[:, col["is_tool"]], [0, 1, 0, 0])
    for action, expected in (("APPLY", [0, 0, 0, 1]), ("OBSERVE", [1, 0, 1, 0]), ("SOLVE", [0, 1, 0, 0])):
        np.testing.assert_array_equal(X[:, col[f"action={action}"]], expected)
    np.testing.assert_array_equal(X[:, col["agent=a2"]], [0, 1, 0, 1])
    assert f.X.dtype == np.float32 and len(f) == 35


def test_text_feature_set_is_bounded_and_named(toy, sim):
    f = step_features(queries.runner(toy), "toy", {}, "structural+text")
    text_cols = [c for c in f.columns if c.startswith("text_")]
    assert len(text_cols) == 48 and f.feature_set == "structural+text"
    whole = step_features(queries.runner(sim), "maadbench-sim", {}, "structural+text")
    chunked = step_features(queries.runner(sim), "maadbench-sim", {}, "structural+text", chunk_runs=7)
    np.testing.assert_array_equal(chunked.X, whole.X)  # read seven runs at a time, the same matrix
    np.testing.assert_array_equal(chunked.step_idx, whole.step_idx)
    assert (whole.X[:, [whole.columns.index(c) for c in text_cols]] > 0).any(axis=1).mean() > 0.9
    with pytest.raises(AtlasError, match="unknown feature set"):
        step_features(queries.runner(toy), "toy", {}, "bag-of-everything")


# ------------------------------------------------------------------------------- splits

def test_no_room_or_run_on_both_sides(sim):
    runs = _con(sim).execute("SELECT run_id, corpus, backbone, task_id, room_id, difficulty, n_steps FROM runs "
                             "WHERE corpus = 'maadbench-sim' ORDER BY run_id").df()
    keys = runs["task_id"] + "|" + runs["room_id"] + "|" + runs["difficulty"]
    previous = None
    for seed in range(5):
        split = group_split(runs, seed)
        test_keys, train_keys = set(keys[split.test_run]), set(keys[~split.test_run])
        assert test_keys and train_keys and not test_keys & train_keys
        assert split.groups == "task_id+room_id+difficulty"
        assert abs(len(test_keys) / keys.nunique() - 0.2) < 0.02
        np.testing.assert_array_equal(group_split(runs, seed).test_run, split.test_run)  # seeded
        if previous is not None:
            assert not np.array_equal(previous, split.test_run)
        previous = split.test_run


def test_runs_without_rooms_are_grouped_by_run():
    import pandas as pd

    runs = pd.DataFrame({"run_id": ["c:1", "c:2", "c:3"], "corpus": "c", "task_id": None, "room_id": None,
                         "difficulty": None})
    keys, how = run_groups(runs)
    assert how == "run_id" and len(set(keys)) == 3
    runs.loc[0, ["task_id", "room_id", "difficulty"]] = ["t", "room", "easy"]
    assert "run_id for runs without a room" in run_groups(runs)[1]


# ------------------------------------------------------------------------------- engine

def _sets(root: Path, source: str):
    return _con(root).execute("SELECT * FROM prediction_sets WHERE source_file = ? ORDER BY set_id", [source]).df()


def test_rescore_writes_sets_with_provenance_and_leaves_other_sources_alone(sim):
    before_manifest = read_manifest(sim)["sources"]
    before_rows = _source_rows(sim)
    result = engine.score(sim, ["random", "iforest", "ocsvm", "logreg"], {"corpus": ["maadbench-sim"]}, 2)
    assert result.source and result.source.startswith("rescore-") and not result.notes
    after = read_manifest(sim)["sources"]
    for name, entry in before_manifest.items():
        assert after[name] == entry, name  # same folder, same counts: nothing replaced
    rows = _source_rows(sim)
    for name, counts in before_rows.items():
        assert rows[name] == counts, name
    assert set(after) == set(before_manifest) | {result.source}

    sets = _sets(sim, result.source)
    assert len(sets) == 8 and set(sets["method"]) == {"random", "iforest", "ocsvm", "logreg"}
    n_steps, n_runs = _con(sim).execute(
        "SELECT count(*), count(DISTINCT run_id) FROM steps WHERE corpus = 'maadbench-sim'").fetchone()
    for rec in sets.to_dict(orient="records"):
        d = registry.get(rec["method"])
        assert (rec["family"], rec["supervision"], rec["granularity"], rec["origin"]) == (d.family, d.supervision, "step", "rescore")
        assert rec["feature_set"] == "structural" and rec["seed"] in (0, 1)
        assert json.loads(rec["slice"]) == {"corpus": ["maadbench-sim"]}
        params = json.loads(rec["params"])
        for key in ("estimator", "estimator_params", "feature_columns", "split", "fit_seconds", "score_seconds",
                    "peak_memory_mb", "peak_rss_mb", "n_fit", "max_train", "executor", "data_sources", "test_metrics"):
            assert key in params, key
        assert params["split"]["seed"] == rec["seed"] and params["executor"] == "in-process"
        assert params["data_sources"] == {"demo": before_manifest["demo"]["dir"]}
        counts = _con(sim).execute(
            "SELECT count(*) FILTER (WHERE step_idx IS NOT NULL), count(*) FILTER (WHERE step_idx IS NULL) "
            "FROM predictions WHERE set_id = ?", [rec["set_id"]]).fetchone()
        assert counts == (n_steps, n_runs)
        assert params["split"]["n_train_steps"] + params["split"]["n_test_steps"] == n_steps

    # The summaries and the SQL list agree with scikit-learn on the stored rows.
    listed = _con(sim).execute("SELECT 1").fetchone()  # noqa: F841 (warm the connection)
    from queries import run

    table = run("rescore_sets", {"corpora": ["maadbench-sim"]}, root=sim).set_index("set_id")
    for summary in result.sets:
        y, s = _con(sim).execute(
            "SELECT list(st.label ORDER BY p.run_id, p.step_idx), list(p.score ORDER BY p.run_id, p.step_idx) "
            "FROM predictions p JOIN steps st USING (run_id, step_idx) "
            "WHERE p.set_id = ? AND p.split = 'test' AND st.label IS NOT NULL", [summary.set_id]).fetchone()
        expected = roc_auc_score(y, s)
        assert summary.test_roc_auc == pytest.approx(expected, abs=1e-12)
        assert table.loc[summary.set_id, "test_roc_auc"] == pytest.approx(expected, abs=1e-9)
        assert (summary.test_pos, summary.test_neg) == (sum(y), len(y) - sum(y))
    # The list read the stored ranks (its twin over the derived tables); the live query agrees.
    import pandas as pd

    import queries as query_layer

    assert query_layer.database.for_store(sim).derived
    with pytest.MonkeyPatch.context() as m:
        m.setattr(query_layer.twins, "TWINS", {})
        live = run("rescore_sets", {"corpora": ["maadbench-sim"]}, root=sim).set_index("set_id")
    pd.testing.assert_frame_equal(live, table)


def test_split_is_room_disjoint_in_the_store_and_runs_take_their_steps_max(sim):
    result = engine.score(sim, ["iforest"], {"corpus": ["maadbench-sim"]}, [3])
    set_id = result.sets[0].set_id
    con = _con(sim)
    mixed = con.execute("""
        SELECT r.task_id, r.room_id, r.difficulty, count(DISTINCT p.split) AS sides
        FROM predictions p JOIN runs r USING (run_id)
        WHERE p.set_id = ? GROUP BY ALL HAVING sides > 1""", [set_id]).fetchall()
    assert mixed == []
    bad_runs = con.execute("""
        SELECT s.run_id FROM predictions s JOIN predictions r ON r.set_id = s.set_id AND r.run_id = s.run_id
        WHERE s.set_id = ? AND s.step_idx IS NOT NULL AND r.step_idx IS NULL
        GROUP BY s.run_id, r.score, r.split, r.pred_label
        HAVING max(s.score) <> r.score OR any_value(s.split) <> r.split OR max(s.pred_label) <> r.pred_label""",
                          [set_id]).fetchall()
    assert bad_runs == []


def test_training_rows_follow_supervision_and_never_use_missing_labels(toy):
    result = engine.score(toy, ["iforest", "ocsvm", "logreg"], {"backbone": ["A", "B"]}, 1)
    con = _con(toy)
    for summary in result.sets:
        params = json.loads(con.execute("SELECT params FROM prediction_sets WHERE set_id = ?", [summary.set_id]).fetchone()[0])
        train, labeled, normal = con.execute("""
            SELECT count(*), count(st.label), count(*) FILTER (WHERE st.label = 0)
            FROM predictions p JOIN steps st USING (run_id, step_idx)
            WHERE p.set_id = ? AND p.split = 'train'""", [summary.set_id]).fetchone()
        expected = {"unsupervised": train, "one-class": normal, "supervised": labeled}[summary.supervision]
        assert params["n_fit"] == expected, summary.detector
        assert labeled < train  # the fixture holds unlabeled training steps: they were left out above
    unlabeled = con.execute("""SELECT count(*) FROM predictions p JOIN steps st USING (run_id, step_idx)
                               WHERE p.set_id = ? AND st.label IS NULL""", [result.sets[0].set_id]).fetchone()[0]
    assert unlabeled == 2  # scored all the same


def test_a_slice_without_anomalies_is_refused_and_nothing_is_written(toy):
    before = read_manifest(toy)
    with pytest.raises(UndefinedMetric, match="no anomalous step"):
        engine.score(toy, ["iforest"], {"backbone": ["C"]}, 1)
    with pytest.raises(UndefinedMetric, match="no run of the store matches"):
        engine.score(toy, ["iforest"], {"backbone": ["Z"]}, 1)
    assert read_manifest(toy) == before


def test_cancelling_writes_nothing(toy):
    before = read_manifest(toy)
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(engine.Cancelled):
        engine.score(toy, ["iforest", "logreg"], {}, 2, should_stop=stop)
    assert read_manifest(toy)["sources"] == before["sources"]


def test_stale_prediction_sets_name_the_sets_a_reingest_invalidates(toy):
    result = engine.score(toy, ["random"], {}, 1)
    assert engine.stale_prediction_sets(queries.runner(toy), toy, "toy") == [s.set_id for s in result.sets]
    assert engine.stale_prediction_sets(queries.runner(toy), toy, "some-other-source") == []
    # What a re-ingest of the source says: the sets by id (a store without any set says nothing).
    from auditatlas.ingest import stale_notes

    note, = stale_notes(toy, "toy")
    assert "are now stale" in note and all(s.set_id in note for s in result.sets)


def test_standard_panel_scores_every_engine_detector(toy):
    result = panel.run_standard_panel(toy, seeds=1)
    assert result.source is None and "standard panel skipped" in result.notes[0]  # no simulated corpus here


# ------------------------------------------------------------------------------- cross-backbone

def test_cross_backbone_matrix(sim):
    from auditatlas.detectors.cross import cross_backbone, result_json

    result = cross_backbone(sim, ["random", "logreg"], {"corpus": ["maadbench-sim"]}, 2)
    assert result.corpus == "maadbench-sim"
    for m in result.matrices:
        assert len(m.backbones) == 5 and m.mean.shape == (5, 5)
        assert np.all((m.mean >= 0) & (m.mean <= 1))
        assert (m.seeds == 2).all()
    logreg = result.matrices[1]
    assert np.nanmean(logreg.mean) > 0.75  # labels are learnable across backbones
    assert abs(np.nanmean(result.matrices[0].mean) - 0.5) < 0.1  # the floor stays a floor
    json.dumps(result_json(result))
    with pytest.raises(UndefinedMetric, match="at least two"):
        cross_backbone(sim, ["logreg"], {"corpus": ["maadbench-sim"], "backbone": ["GPT-4.1"]}, 1)


def test_cross_backbone_spread_is_the_sample_sd_over_seeds(sim):
    """A cell's spread over seeds is the sample standard deviation (ddof=1), as on the boards and
    the Detectors grid: with two seeds, |a - b| / sqrt(2) of the seeds' own cells."""
    from auditatlas.detectors.cross import cross_backbone

    one = {seed: cross_backbone(sim, ["random"], {"corpus": ["maadbench-sim"]}, [seed]).matrices[0].mean
           for seed in (0, 1)}
    both = cross_backbone(sim, ["random"], {"corpus": ["maadbench-sim"]}, 2).matrices[0]
    np.testing.assert_allclose(both.mean, (one[0] + one[1]) / 2)
    np.testing.assert_allclose(both.std, np.abs(one[0] - one[1]) / math.sqrt(2))


# ------------------------------------------------------------------------------- Dask

def test_dask_local_cluster_gives_the_in_process_scores(toy, local_cluster):
    local = engine.score(toy, ["iforest", "logreg", "random"], {}, 2)
    info = local_cluster.scheduler_info()
    assert len(info["workers"]) == 2
    # On the cluster a chunk of three runs at a time: the fits on gathered rows, each chunk
    # scattered and scored in turn.
    remote = engine.score(toy, ["iforest", "logreg", "random"], {}, 2, client=local_cluster, partition_rows=10,
                          chunk_runs=3)
    con = _con(toy)
    for a, b in zip(local.sets, remote.sets):
        assert (a.detector, a.seed) == (b.detector, b.seed)
        sa = con.execute("SELECT list(score ORDER BY run_id, step_idx NULLS LAST) FROM predictions WHERE set_id = ?",
                         [a.set_id]).fetchone()[0]
        sb = con.execute("SELECT list(score ORDER BY run_id, step_idx NULLS LAST) FROM predictions WHERE set_id = ?",
                         [b.set_id]).fetchone()[0]
        np.testing.assert_allclose(sa, sb, rtol=1e-9)
        params = json.loads(con.execute("SELECT params FROM prediction_sets WHERE set_id = ?", [b.set_id]).fetchone()[0])
        assert params["executor"].startswith("dask tcp://127.0.0.1") and "2 workers" in params["executor"]
        if b.detector != "random":
            assert params["partitions"] == 6  # 35 steps: chunks of 12, 12 and 11 steps, each in parts of 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def dask_cluster():
    """A scheduler and one worker started as their own processes, as on a real cluster."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([str(VENV_BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("dask scheduler did not start")
                time.sleep(0.3)
        procs.append(subprocess.Popen([str(VENV_BIN / "dask"), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                       "--no-dashboard", "--host", "127.0.0.1"], cwd=REPO, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with Client(address, timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_cli_score_on_a_separately_started_cluster(toy, dask_cluster):
    # The command runs in this process (tests/cli_support.py); the scheduler and its worker are
    # processes of their own, as on a real cluster.
    done = run_cli("--store", str(toy), "score", "--detector", "logreg", "--detector", "hbos",
                   "--slice", "backbone=A", "--slice", "backbone=B", "--seeds", "2", "--scheduler", dask_cluster,
                   cwd=REPO)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("rescore-")]
    assert len(lines) == 4 and all("test ROC-AUC" in line for line in lines)
    assert "wrote 4 prediction set(s)" in done.stdout
    assert "%" in done.stderr  # the progress bar
    params = [json.loads(p) for (p,) in _con(toy).execute(
        "SELECT params FROM prediction_sets WHERE origin = 'rescore'").fetchall()]
    assert all(p["executor"].startswith(f"dask {dask_cluster}") for p in params)


def test_cli_says_what_is_wrong_in_one_sentence(toy):
    def run(*args):
        return run_cli("--store", str(toy), *args, cwd=REPO)

    bad = run("score", "--detector", "nope")
    assert bad.returncode == 1 and bad.stderr.strip().startswith("error: unknown detector 'nope'")
    bad = run("score", "--detector", "iforest", "--slice", "colour=red")
    assert bad.returncode == 1 and "not a slice column" in bad.stderr
    bad = run("score", "--detector", "iforest", "--slice", "backbone=C")
    assert bad.returncode == 1 and "no anomalous step" in bad.stderr and "Traceback" not in bad.stderr
    bad = run("score", "--detector", "iforest", "--seeds", "0")
    assert bad.returncode == 2
    assert read_manifest(toy)["sources"].keys() == {"toy"}


def test_cli_says_when_the_scheduler_cannot_be_reached(toy):
    port = _free_port()  # nothing listens there
    done = run_cli("--store", str(toy), "score", "--detector", "logreg", "--scheduler", f"tcp://127.0.0.1:{port}",
                   cwd=REPO, env={"AUDITATLAS_SCHEDULER_TIMEOUT": "1"})  # not the 10 s a user gets
    assert done.returncode == 1
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
    assert read_manifest(toy)["sources"].keys() == {"toy"}


def test_scheduler_timeout_setting(monkeypatch):
    from auditatlas.cluster import scheduler_timeout

    for raw, expected in (("", 10.0), ("2.5", 2.5)):
        monkeypatch.setenv("AUDITATLAS_SCHEDULER_TIMEOUT", raw)
        assert scheduler_timeout() == expected
    for raw in ("0", "soon"):
        monkeypatch.setenv("AUDITATLAS_SCHEDULER_TIMEOUT", raw)
        with pytest.raises(AtlasError, match="AUDITATLAS_SCHEDULER_TIMEOUT must be a number of seconds"):
            scheduler_timeout()


def test_cli_workers_0_runs_the_jobs_in_this_process(toy):
    """``--workers 0`` means this process only, on both subcommands that take it."""
    def run(*args):
        return run_cli("--store", str(toy), *args, cwd=REPO)

    done = run("score", "--detector", "random", "--workers", "0")
    assert done.returncode == 0, done.stderr
    assert "wrote 1 prediction set(s)" in done.stdout
    assert "Dask" not in done.stderr  # no cluster was started
    (params,) = [json.loads(p) for (p,) in _con(toy).execute(
        "SELECT params FROM prediction_sets WHERE origin = 'rescore'").fetchall()]
    assert params["executor"] == "in-process"

    done = run("cross-backbone", "--detector", "random", "--slice", "backbone=A", "--slice", "backbone=B",
               "--workers", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["executor"] == "in-process"

    bad = run("score", "--detector", "random", "--workers", "-1")
    assert bad.returncode == 2 and "--workers" in bad.stderr and "Traceback" not in bad.stderr


def test_a_set_written_a_few_runs_at_a_time_keeps_every_row_and_rank(sim, monkeypatch):
    """A set larger than a store batch is cut where runs change: every step and run row lands
    once, and each run's step ranks are those of the whole run (worked here with pandas)."""
    from auditatlas.detectors import prediction_sets
    from auditatlas.store import SourceWriter

    monkeypatch.setattr(prediction_sets, "WRITE_BATCH_ROWS", 700)  # the set is ~3,100 rows
    batches: list[int] = []
    append = SourceWriter.append
    monkeypatch.setattr(SourceWriter, "append",
                        lambda self, tables: (batches.append(len(tables["predictions"])), append(self, tables))[1])
    result = engine.score(sim, ["iforest"], {"corpus": ["maadbench-sim"]}, [5], client=None)
    set_id = result.sets[0].set_id
    con = _con(sim)
    n_steps, n_runs = con.execute(
        "SELECT count(*), count(DISTINCT run_id) FROM steps WHERE corpus = 'maadbench-sim'").fetchone()
    rows = con.execute("SELECT run_id, step_idx, score, rank FROM predictions WHERE set_id = ?",
                       [set_id]).df()
    steps = rows[rows["step_idx"].notna()].copy()
    assert len(steps) == n_steps and rows["step_idx"].isna().sum() == n_runs
    assert not steps.duplicated(["run_id", "step_idx"]).any()
    assert len(batches) >= 4 and max(batches) <= 700 and sum(batches) == len(rows)
    steps = steps.sort_values(["run_id", "score", "step_idx"], ascending=[True, False, True])
    steps["expected"] = steps.groupby("run_id").cumcount() + 1
    assert (steps["rank"] == steps["expected"]).all()


def test_a_corpus_read_a_chunk_of_runs_at_a_time_gets_the_scores_of_one_read(sim, monkeypatch):
    """Scored with its features held for 40 runs at a time (8 chunks of the 300 rooms), every
    set has the scores (to the last bits), decisions and fit rows of the same call reading the
    corpus at once:
    the fits' rows are gathered from the chunks, each chunk scored in turn. No read holds more
    than one chunk's steps, and each chunk is read twice (the fits' rows, then the scores)."""
    from auditatlas.detectors import features as features_module

    detectors, seeds, where = ["iforest", "lof", "logreg", "hbos", "ecod", "copod", "random"], [3], {"corpus": ["maadbench-sim"]}
    whole = engine.score(sim, detectors, where, seeds, client=None)
    reads: list[int] = []
    chunk = features_module.FeatureReader.chunk
    monkeypatch.setattr(features_module.FeatureReader, "chunk",
                        lambda self, i, progress=None: (reads.append(i), chunk(self, i, progress))[1])
    monkeypatch.setattr(features_module.FeatureReader, "every_step", None)  # never the whole matrix
    chunked = engine.score(sim, detectors, where, seeds, client=None, chunk_runs=40)
    assert sorted(reads) == sorted(list(range(8)) * 2)
    con = _con(sim)

    def rows(set_id: str) -> list:
        return con.execute("SELECT run_id, step_idx, score, pred_label, split FROM predictions WHERE set_id = ? "
                           "ORDER BY run_id, step_idx NULLS LAST", [set_id]).fetchall()

    for a, b in zip(whole.sets, chunked.sets, strict=True):
        assert (a.detector, a.seed, a.n_steps) == (b.detector, b.seed, b.n_steps)
        ra, rb = rows(a.set_id), rows(b.set_id)
        assert [(r[0], r[1], r[3], r[4]) for r in ra] == [(r[0], r[1], r[3], r[4]) for r in rb], a.detector
        # The same rows in other batch shapes: a matrix product may round its last bit otherwise.
        np.testing.assert_allclose([r[2] for r in ra], [r[2] for r in rb], rtol=1e-12, atol=0, err_msg=a.detector)
        pa, pb = (json.loads(con.execute("SELECT params FROM prediction_sets WHERE set_id = ?", [s]).fetchone()[0])
                  for s in (a.set_id, b.set_id))
        assert pa["fit_rows"] == pb["fit_rows"] and pa["dropped_columns"] == pb["dropped_columns"]
