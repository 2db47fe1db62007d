"""Run-level failure detection: prefix features, scorers, board entrants, LIVE trajectories."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from auditatlas.analyses.board_detection import LIVE_BOARD, POST_BOARD
from auditatlas.analyses.run_detection import (
    cv_scores,
    cv_seed_scores,
    detection_entrants,
    ecod_scores,
    live_trajectories,
    prediction_set_entrants,
    random_scores,
    time_to_detection,
)
from auditatlas.analyses.run_features import FEATURE_COLUMNS, FEATURE_GROUPS, prefix_features
from auditatlas.errors import UndefinedMetric
from auditatlas.stats import roc_auc
from auditatlas.store import write_source
from queries import runner

POST_ENTRANTS, LIVE_ENTRANTS = POST_BOARD.entrants, LIVE_BOARD.entrants
POST_NAMES = tuple(e.name for e in POST_ENTRANTS)
LIVE_NAMES = tuple(e.name for e in LIVE_ENTRANTS)
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = SHARED_DATA / "tau-bench" / "gpt-4o-airline.trials01.json"


# ------------------------------------------------------------------------------- stores

def _run(corpus: str, name: str, n: int, outcome: str) -> dict:
    return {"run_id": f"{corpus}:{name}", "corpus": corpus, "n_steps": n, "outcome": outcome}


def _steps(run: dict, agents: list, tools: list) -> list[dict]:
    return [
        {"run_id": run["run_id"], "corpus": run["corpus"], "step_idx": i, "agent": a, "is_tool": t}
        for i, (a, t) in enumerate(zip(agents, tools))
    ]


def _edges(run: dict, pairs: list[tuple[int, int]], kind: str = "data") -> list[dict]:
    return [
        {"run_id": run["run_id"], "corpus": run["corpus"], "src_idx": s, "dst_idx": d,
         "kind": kind, "provenance": "observed"}
        for s, d in pairs
    ]


# Run A (failed, 8 steps). P = planner, C = coder, E = env (the tool steps 2 and 5):
#   idx    0  1  2  3  4  5  6  7
#   agent  P  C  E  C  P  E  C  P
# Edges (src -> dst): 0-1, 1-2, 2-3, 0-3, 3-5, 5-6, 0-6, 6-7, and 1-2 again with another kind
# (the same dependency: counted once).
A_EDGES = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 5), (5, 6), (0, 6), (6, 7)]


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    a = _run("toy", "a", 8, "failure")
    b = _run("toy", "b", 10, "success")  # one agent, no edges, some tool flags missing
    c = _run("toy", "c", 3, "success")  # shorter than min_steps=4
    d = _run("toy", "d", 8, "unknown")  # no outcome: never in the population
    x = _run("other", "x", 8, "success")  # another corpus
    steps = (
        _steps(a, list("PCECPECP"), [False, False, True, False, False, True, False, False])
        + _steps(b, ["solo"] * 10, [True, None, False, None, False, False, True, False, False, False])
        + _steps(c, ["P", "C", "P"], [False] * 3)
        + _steps(d, list("PCECPECP"), [False] * 8)
        + _steps(x, list("PCECPECP"), [False] * 8)
    )
    edges = _edges(a, A_EDGES) + _edges(a, [(1, 2)], kind="handoff") + _edges(d, [(0, 7)]) + _edges(x, [(0, 7)])
    # A step-level prediction set: a's step scores rise then fall, b's are flat; plus a training
    # row that must be ignored and a run-level set.
    sets = [
        {"set_id": "toy:judge", "corpus": "toy", "method": "judge", "granularity": "step"},
        {"set_id": "toy:runscore", "corpus": "toy", "method": "rs", "granularity": "run"},
    ]
    a_scores = [0.1, 0.2, 0.9, 0.3, 0.95, 0.0, 0.0, 0.0]
    preds = [
        {"set_id": "toy:judge", "corpus": "toy", "run_id": a["run_id"], "step_idx": i, "score": s, "split": "test"}
        for i, s in enumerate(a_scores)
    ] + [
        {"set_id": "toy:judge", "corpus": "toy", "run_id": b["run_id"], "step_idx": i, "score": 0.5, "split": "test"}
        for i in range(10)
    ] + [
        # A training row above every test score: it would win the max if it were read.
        {"set_id": "toy:judge", "corpus": "toy", "run_id": b["run_id"], "step_idx": 0, "score": 9.0, "split": "train"},
        {"set_id": "toy:runscore", "corpus": "toy", "run_id": a["run_id"], "score": 0.7, "split": "all"},
        {"set_id": "toy:runscore", "corpus": "toy", "run_id": b["run_id"], "score": 0.2, "split": "all"},
    ]
    write_source(root, "toy", {"runs": [a, b, c, d, x], "steps": steps, "edges": edges,
                               "prediction_sets": sets, "predictions": preds})
    return root


def _random_store(root: Path, n_runs: int, seed: int, corpus: str = "synth", max_steps: int = 30) -> None:
    """Runs whose failure leans on length and dependency density, so detectors have signal."""
    rng = np.random.default_rng(seed)
    runs, steps, edges = [], [], []
    for r in range(n_runs):
        n = int(rng.integers(4, max_steps + 1))
        density = float(rng.uniform(0.02, 0.3))
        pairs = [(s, d) for d in range(1, n) for s in range(d) if rng.random() < density]
        risk = 0.08 * (n - 15) + 6 * (density - 0.15) + rng.normal(0, 1)
        run = _run(corpus, f"r{r:04d}", n, "failure" if risk > 0 else "success")
        runs.append(run)
        agents = [f"agent{int(rng.integers(0, 4))}" for _ in range(n)]
        steps += _steps(run, agents, [bool(rng.random() < 0.4) for _ in range(n)])
        edges += _edges(run, pairs)
        # Repeat a few dependencies under another kind: still one dependency each.
        edges += _edges(run, [p for p in pairs if rng.random() < 0.2], kind="context")
    write_source(root, corpus, {"runs": runs, "steps": steps, "edges": edges})


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    _random_store(root, 60, seed=7)
    _oracle_source(root)
    return root


def _oracle_source(root: Path) -> None:
    """A second source with two step-level prediction sets on the synth runs: an oracle whose
    top step score is 1 exactly in failed runs, and one whose set_id clashes with "random"."""
    from queries import connect

    runs = connect(root).execute("SELECT run_id, n_steps, outcome FROM runs ORDER BY run_id").fetchall()
    sets = [{"set_id": s, "corpus": "synth", "method": s, "granularity": "step"} for s in ("synth:oracle", "random")]
    preds = []
    for run_id, n, outcome in runs:
        for i in range(n):
            hit = outcome == "failure" and i == n - 1
            preds.append({"set_id": "synth:oracle", "corpus": "synth", "run_id": run_id, "step_idx": i,
                          "score": 1.0 if hit else 0.0, "split": "test"})
            preds.append({"set_id": "random", "corpus": "synth", "run_id": run_id, "step_idx": i,
                          "score": 0.5, "split": "test"})
    write_source(root, "synthpreds", {"prediction_sets": sets, "predictions": preds})


def _row(features, run_id: str) -> dict:
    table = features.table.set_axis(features.run_ids)  # the table holds features; the ids are beside it
    return table.loc[run_id].to_dict()


# ------------------------------------------------------------------------------- features

def test_population_is_known_outcomes_of_the_corpus_with_enough_steps(toy):
    assert list(prefix_features(runner(toy), "toy", min_steps=4).run_ids) == ["toy:a", "toy:b"]
    assert list(prefix_features(runner(toy), "toy", min_steps=1).run_ids) == ["toy:a", "toy:b", "toy:c"]
    features = prefix_features(runner(toy), "toy", min_steps=4)
    assert list(features.y) == [1, 0]
    # A slice narrows the population further; its own corpus filter is overridden.
    sliced = prefix_features(runner(toy), "toy", slice={"outcome": ["success"], "corpus": ["other"]})
    assert list(sliced.run_ids) == ["toy:b", "toy:c"]


def test_whole_run_features_by_hand(toy):
    a = _row(prefix_features(runner(toy), "toy", fraction=1.0, min_steps=4), "toy:a")
    # Size: 8 steps, tools at 2 and 5, agents P, C, E.
    assert (a["n_steps"], a["n_tool_calls"], a["n_decisions"], a["n_agents"]) == (8, 2, 6, 3)
    # Exec: P and C act 3 times, E twice. Gini = sum|ci-cj| / (2 m total) = 4 / (2*3*8) = 1/12.
    assert a["max_agent_outdeg"] == 3
    assert a["agent_gini"] == pytest.approx(1 / 12)
    # P C E C P E C P: all 7 consecutive pairs change agent; distinct pairs PC, CE, EC, CP, PE = 5;
    # steps 3..7 all return to an agent seen before: recurrence 5 / 7.
    assert a["n_agent_transitions"] == 5
    assert a["agent_recurrence"] == pytest.approx(5 / 7)
    # Dependencies: 8 distinct pairs (1-2 twice is one). Longest chain 0-1-2-3-5-6-7 = 6 edges.
    assert a["n_dep_edges"] == 8
    assert a["dep_depth"] == 6
    # Blast: step 0 has dependents 1, 3, 6 -> 3. Audit: steps 3 (on 0, 2) and 6 (on 0, 5) -> 2.
    assert (a["max_blast_indeg"], a["max_audit_outdeg"]) == (3, 2)
    assert a["dep_edges_per_step"] == pytest.approx(8 / 8)
    assert a["rel_dep_depth"] == pytest.approx(6 / 8)
    assert a["max_blast_share"] == pytest.approx(3 / 8)
    assert a["max_audit_share"] == pytest.approx(2 / 8)
    # Spans (dst - earliest src): 1:1, 2:1, 3:3, 5:2, 6:6, 7:1 -> max 6, mean 14/8 over 8 steps.
    assert a["max_span"] == 6
    assert a["mean_span"] == pytest.approx(14 / 8)


def test_half_prefix_drops_later_steps_and_edges(toy):
    a = _row(prefix_features(runner(toy), "toy", fraction=0.5, min_steps=4), "toy:a")
    # First 4 steps P C E C; edges with both ends inside: 0-1, 1-2, 2-3, 0-3 (3-5, 5-6, 0-6, 6-7 dropped).
    assert a["prefix_steps"] == 4 and a["run_steps"] == 8
    assert (a["n_steps"], a["n_tool_calls"], a["n_decisions"], a["n_agents"]) == (4, 1, 3, 3)
    # Counts P1 C2 E1: Gini = 4 / (2*3*4) = 1/6; 3 changes, 3 distinct pairs, 1 return (step 3).
    assert a["max_agent_outdeg"] == 2
    assert a["agent_gini"] == pytest.approx(1 / 6)
    assert a["n_agent_transitions"] == 3
    assert a["agent_recurrence"] == pytest.approx(1 / 3)
    assert a["n_dep_edges"] == 4
    assert a["dep_depth"] == 3  # 0-1-2-3
    assert (a["max_blast_indeg"], a["max_audit_outdeg"]) == (2, 2)  # 0 -> {1, 3}; 3 <- {0, 2}
    assert a["max_blast_share"] == pytest.approx(2 / 4)
    assert a["max_span"] == 3
    assert a["mean_span"] == pytest.approx((1 + 1 + 3) / 4)


def test_prefix_length_is_the_ceiling_of_the_fraction(toy):
    def k(fraction: float, run_id: str) -> int:
        return int(_row(prefix_features(runner(toy), "toy", fraction=fraction, min_steps=4), run_id)["prefix_steps"])

    assert k(0.25, "toy:a") == 2  # 0.25 * 8 = 2
    assert k(0.3, "toy:a") == 3  # 2.4 rounds up
    assert k(0.7, "toy:b") == 7  # 0.7 * 10 is 7.000000000000001 in floating point: still 7
    assert k(0.01, "toy:a") == 1  # never an empty prefix
    with pytest.raises(ValueError):
        prefix_features(runner(toy), "toy", fraction=0.0)


def test_single_agent_run_without_edges(toy):
    b = _row(prefix_features(runner(toy), "toy", fraction=1.0, min_steps=4), "toy:b")
    # Tool flags True at 0 and 6; two missing flags count as decisions.
    assert (b["n_steps"], b["n_tool_calls"], b["n_decisions"], b["n_agents"]) == (10, 2, 8, 1)
    assert (b["max_agent_outdeg"], b["agent_gini"], b["n_agent_transitions"], b["agent_recurrence"]) == (10, 0, 0, 0)
    for col in ("n_dep_edges", "dep_depth", "max_blast_indeg", "max_audit_outdeg", "max_span", "mean_span",
                "rel_dep_depth", "max_blast_share"):
        assert b[col] == 0


def test_feature_groups_are_nested_as_in_auditable():
    assert FEATURE_GROUPS["size"] == ("n_steps", "n_tool_calls", "n_decisions", "n_agents")
    assert FEATURE_GROUPS["size+deps"][:4] == FEATURE_GROUPS["size"] and len(FEATURE_GROUPS["size+deps"]) == 8
    assert FEATURE_GROUPS["full"][:4] == FEATURE_GROUPS["size"] and len(FEATURE_GROUPS["full"]) == 12


@pytest.mark.parametrize("fraction", [1.0, 0.5, 0.25])
def test_features_equal_auditables_graph_features(tmp_path, fraction):
    """Our SQL + numpy features equal auditable's (the paper's library) on the same prefixes."""
    from auditable.graph import build_graph, feature_vector

    from queries import connect

    _random_store(tmp_path, 40, seed=3)
    features = prefix_features(runner(tmp_path), "synth", fraction=fraction)
    con = connect(tmp_path)
    steps = con.execute("SELECT run_id, step_idx, agent, is_tool FROM steps ORDER BY run_id, step_idx").fetchall()
    deps: dict[tuple[str, int], list[int]] = {}
    for run_id, src, dst in con.execute("SELECT run_id, src_idx, dst_idx FROM edges").fetchall():
        deps.setdefault((run_id, dst), []).append(src)
    by_run: dict[str, list[dict]] = {}
    for run_id, idx, agent, is_tool in steps:
        by_run.setdefault(run_id, []).append(
            {"idx": idx, "agent": agent, "kind": "tool_call" if is_tool else "decision",
             "deps": deps.get((run_id, idx), [])})
    table = features.table.set_axis(features.run_ids)  # the table holds features; the ids are beside it
    for run_id in features.run_ids:
        prefix = by_run[run_id][: int(table.loc[run_id, "prefix_steps"])]
        graph = build_graph(prefix, dependency="explicit", shared_resource=False)
        for layer, group in (("flatdep", "size+deps"), ("full", "full")):
            names, values = feature_vector(graph, layer=layer)
            assert tuple(names) == FEATURE_GROUPS[group]
            ours = table.loc[run_id, list(names)].to_numpy(dtype=float)
            np.testing.assert_allclose(ours, values, rtol=1e-12, err_msg=f"{run_id} {layer}")


# ------------------------------------------------------------------------------- scorers

def _noise(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.array([0, 1] * (n // 2))
    return rng.normal(size=(n, p)), y


def test_cv_scores_are_deterministic_per_seed():
    X, y = _noise(40, 3, seed=1)
    X[:, 0] += y  # some signal so the scores are not all alike
    a, b = cv_scores(X, y), cv_scores(X, y)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (40,) and np.all((a > 0) & (a < 1))
    rows = cv_seed_scores(X, y)
    assert rows.shape == (5, 40)
    np.testing.assert_allclose(a, rows.mean(axis=0))
    # Another seed means other folds, so other out-of-fold scores.
    assert not np.allclose(cv_scores(X, y, seeds=(1,)), rows[0])
    np.testing.assert_array_equal(cv_scores(X, y, seeds=(3,)), rows[3])


def test_cv_scores_are_out_of_fold():
    """Pure noise with more columns than runs: a model scoring its own training runs separates
    them perfectly (AUC 1.0); out-of-fold scores must stay near chance."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _noise(60, 120, seed=2)
    leaky = make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear", class_weight="balanced"))
    in_sample = leaky.fit(X, y).predict_proba(X)[:, 1]
    assert roc_auc_score(y, in_sample) == 1.0  # what a leak looks like on this data
    assert roc_auc_score(y, cv_scores(X, y)) < 0.75


def test_learner_is_auditables_run_detector():
    """The CV learner is the one behind auditable's "size (flat)" detector (run.lr_flat)."""
    from auditable import get_method

    X, y = _noise(50, 4, seed=4)
    X[:, 1] += 0.8 * y
    train, test = np.arange(35), np.arange(35, 50)
    theirs = get_method("run.lr_flat")().fit(X[train], y[train]).predict_proba(X[test])[:, 1]
    from auditatlas.analyses.run_detection import _learner

    ours = _learner().fit(X[train], y[train]).predict_proba(X[test])[:, 1]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_ecod_matches_auditables_ecod_and_ignores_constant_columns():
    from auditable import get_method

    rng = np.random.default_rng(5)
    X = np.c_[rng.poisson(10, 80), rng.poisson(3, 80), rng.poisson(7, 80), np.ones(80)].astype(float)
    theirs = get_method("run.pyod_ecod")()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyod warns about the constant column; we drop it
        theirs = theirs.fit(X).decision_scores_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ecod_scores(X)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)
    assert np.all(ecod_scores(np.ones((10, 4))) == 0)


def test_random_scores_are_seeded_uniforms():
    a = random_scores(500, seed=0)
    assert np.array_equal(a, random_scores(500, seed=0))
    assert not np.array_equal(a, random_scores(500, seed=1))
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05


# ------------------------------------------------------------------------------- entrants

def test_undefined_on_one_outcome_or_too_few_runs(toy, synth):
    with pytest.raises(UndefinedMetric, match=r"all \d+ runs failed"):
        detection_entrants(runner(synth), "synth", entrants=POST_ENTRANTS, slice={"outcome": ["failure"]})
    # The toy corpus has 1 failed and 2 succeeded runs: too few for 5-fold CV.
    with pytest.raises(UndefinedMetric, match="at least 5 failed and 5 succeeded"):
        detection_entrants(runner(toy), "toy", entrants=POST_ENTRANTS)
    with pytest.raises(UndefinedMetric):
        cv_scores(np.ones((10, 2)), np.zeros(10, dtype=int))


def test_post_entrants_score_every_run(synth):
    entrants = detection_entrants(runner(synth), "synth", entrants=POST_ENTRANTS)
    # Board entrants first, then the prediction sets; a clashing set_id is renamed, not lost.
    assert tuple(entrants) == POST_NAMES + ("random (prediction set)", "synth:oracle")
    ids = entrants["random"].run_ids
    assert len(ids) == 60
    for name, (run_ids, y, scores) in entrants.items():
        assert list(run_ids) == list(ids), name
        assert np.isfinite(scores).all() and scores.shape == (60,), name
        assert 0.0 <= roc_auc(y, scores) <= 1.0
    # The synthetic failures lean on run length: the supervised size model must find that.
    assert roc_auc(entrants["size (flat)"].y, entrants["size (flat)"].scores) > 0.7
    # The oracle's last-step hit is the run's max only over the whole run.
    assert roc_auc(entrants["synth:oracle"].y, entrants["synth:oracle"].scores) == 1.0
    half = detection_entrants(runner(synth), "synth", entrants=POST_ENTRANTS, fraction=0.5, seeds=(0,))
    assert roc_auc(half["synth:oracle"].y, half["synth:oracle"].scores) == 0.5


def test_prediction_sets_become_run_scores(toy):
    whole = prefix_features(runner(toy), "toy", fraction=1.0, min_steps=4)
    sets = prediction_set_entrants(runner(toy), "toy", whole, min_steps=4)
    judge = dict(zip(sets["toy:judge"].run_ids, sets["toy:judge"].scores))
    # a: max over all 8 steps = 0.95; b: all 0.5 (the 9.0 training row is ignored).
    assert judge == {"toy:a": 0.95, "toy:b": 0.5}
    assert dict(zip(sets["toy:runscore"].run_ids, sets["toy:runscore"].scores)) == {"toy:a": 0.7, "toy:b": 0.2}
    assert list(sets["toy:judge"].y) == [1, 0]

    half = prefix_features(runner(toy), "toy", fraction=0.5, min_steps=4)
    sets = prediction_set_entrants(runner(toy), "toy", half, min_steps=4, include_run_level=False)
    # a's first 4 steps score 0.1, 0.2, 0.9, 0.3 -> 0.9; the run-level set is a POST artifact.
    assert dict(zip(sets["toy:judge"].run_ids, sets["toy:judge"].scores)) == {"toy:a": 0.9, "toy:b": 0.5}
    assert "toy:runscore" not in sets


def test_time_to_detection():
    assert time_to_detection({0.25: 0.6, 0.5: 0.7, 0.75: 0.8, 1.0: 0.65}) == 0.5
    assert time_to_detection({1.0: 0.71, 0.25: 0.72}) == 0.25
    assert time_to_detection({0.25: 0.69, 1.0: None}) is None


def test_live_trajectories(synth):
    board = live_trajectories(runner(synth), "synth", LIVE_ENTRANTS, seeds=(0, 1))
    assert tuple(board) == LIVE_NAMES  # released step scores are off on LIVE by default
    rand = board["random"]
    # One population at every prefix: the random floor does not move.
    assert len(set(rand.auc.values())) == 1
    assert rand.n_runs == 60 and set(rand.runs.values()) == {60}
    for name, traj in board.items():
        assert list(traj.auc) == [0.25, 0.5, 0.75, 1.0], name
        assert all(v is not None and 0 <= v <= 1 for v in traj.auc.values()), name
    # The whole-run column is the POST board on the LIVE population.
    post = detection_entrants(runner(synth), "synth", entrants=POST_ENTRANTS, min_steps=4, prediction_sets=False, seeds=(0, 1))
    assert board["full"].auc[1.0] == pytest.approx(roc_auc(post["full"].y, post["full"].scores))


def test_live_time_to_detection_on_worked_prediction_sets(synth):
    """Hand-worked: the oracle scores 1 only at a failed run's last step, so every proper prefix
    (25/50/75% of >= 4 steps never reaches the last step) scores all runs 0 (AUC 0.5) and the
    whole run separates them (AUC 1.0): it first reaches 0.70 at 100%. The flat 0.5 set never does."""
    board = live_trajectories(runner(synth), "synth", LIVE_ENTRANTS, seeds=(0, 1), prediction_sets=True)
    oracle, flat = board["synth:oracle"], board["random (prediction set)"]
    assert oracle.auc == {0.25: 0.5, 0.5: 0.5, 0.75: 0.5, 1.0: 1.0}
    assert oracle.t2d == 1.0
    assert flat.auc == {0.25: 0.5, 0.5: 0.5, 0.75: 0.5, 1.0: 0.5}
    assert flat.t2d is None


# ------------------------------------------------------------------------------- real data

@pytest.fixture(scope="module")
def tau_store(tmp_path_factory) -> Path:
    if not TAU.is_file():
        pytest.skip(f"real tau-bench data not found at {TAU}")
    # Imported plainly: a broken adapter must fail this test, not skip it.
    from auditatlas.ingest import Context, taubench

    root = tmp_path_factory.mktemp("tau")
    batch = taubench.read(TAU, Context(store=root))
    write_source(root, batch.source, batch.tables)
    return root


def test_tau_bench_post_detection(tau_store):
    entrants = detection_entrants(runner(tau_store), "taubench", entrants=POST_ENTRANTS)
    assert tuple(entrants)[: len(POST_NAMES)] == POST_NAMES
    aucs = {name: roc_auc(e.y, e.scores) for name, e in entrants.items()}
    assert len(entrants["random"].y) == 100
    assert all(np.isfinite(v) for v in aucs.values()), aucs
    assert 0.35 <= aucs["random"] <= 0.65, aucs
    # Failed tau-bench runs are longer (57 failures, mean 29.7 steps vs 20.1): size must beat chance.
    assert aucs["size (flat)"] > 0.6, aucs


def test_tau_bench_live(tau_store):
    board = live_trajectories(runner(tau_store), "taubench", LIVE_ENTRANTS)
    for name, traj in board.items():
        assert all(v is not None and np.isfinite(v) for v in traj.auc.values()), (name, traj)
    assert 0.35 <= board["random"].auc[0.25] <= 0.65
    # Over the whole run LIVE is the POST population: failed runs are longer (see above), so size
    # separates them there too, and the random floor stays a floor.
    assert board["size (flat)"].auc[1.0] > 0.6, board["size (flat)"]
    assert board["random"].t2d is None


def test_boards_score_every_run_and_fit_large_populations_on_distinct_rows(synth, monkeypatch):
    """Above DISTINCT_ABOVE runs the detection boards still score every run; their supervised
    entrants' folds are fitted on distinct weighted rows, which must give the scores that
    scikit-learn's fits on every run give (the path below the threshold), and the board's cells
    must be scikit-learn's ROC-AUC of those scores."""
    from auditatlas.analyses import run_detection
    from auditatlas.analyses.board_registry import run_board

    every_run = detection_entrants(runner(synth), "synth", entrants=POST_ENTRANTS)
    monkeypatch.setattr(run_detection, "DISTINCT_ABOVE", 40)
    distinct = detection_entrants(runner(synth), "synth", entrants=POST_ENTRANTS)
    assert list(distinct) == list(every_run)
    for name, plain in every_run.items():
        assert list(distinct[name].run_ids) == list(plain.run_ids), name
        np.testing.assert_allclose(distinct[name].scores, plain.scores, rtol=0, atol=1e-9, err_msg=name)

    result = run_board("post-detection", runner(synth), "synth")
    assert result.n_items == 60
    assert any("Every one of the 60 runs is scored" in note for note in result.notes)
    for row in result.rows:
        plain = every_run[row.entrant]
        assert row.metrics["roc_auc"] == pytest.approx(roc_auc_score(plain.y, plain.scores), abs=1e-12), row.entrant
    monkeypatch.setattr(run_detection, "DISTINCT_ABOVE", 60)
    assert not any("distinct" in note for note in run_board("post-detection", runner(synth), "synth").notes)


@pytest.mark.parametrize("shape", [(0, 3), (1, 4), (6, 0), (4000, 5)])
def test_distinct_rows_are_numpys_unique_rows(shape):
    """The distinct-row fits' grouping gives numpy's own answer (the rows in lexicographic order,
    each row's place among them), repeated rows, signed zeros and column ties included."""
    from auditatlas.analyses.run_detection import distinct_rows

    rng = np.random.default_rng(5)
    n, m = shape
    X = rng.integers(0, 3, size=(n, m)).astype(float) / np.arange(1, m + 1)
    if n > 100:
        X[::9, 0] *= -0.0  # -0.0 equals 0.0: one row, as numpy has it
    expected, expected_inverse = np.unique(X, axis=0, return_inverse=True)
    distinct, inverse = distinct_rows(X)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.ravel())
    if n > 100:
        assert len(distinct) < n / 10  # the rows do repeat


def test_distinct_row_fits_equal_fits_on_every_run_where_rows_repeat():
    """Run features are small counts, so rows repeat: the weighted fit on the distinct rows must
    give each run the score the registry's learner gives it when fitted on every run."""
    from auditatlas.analyses.run_detection import cv_scores_distinct

    rng = np.random.default_rng(3)
    n = 3000
    counts = np.column_stack([rng.integers(1, 15, n), rng.integers(0, 6, n), rng.integers(1, 4, n)]).astype(float)
    X = np.column_stack([counts, counts[:, 1] / counts[:, 0]])
    y = (rng.random(n) < 1 / (1 + np.exp(-(counts[:, 0] - 8) / 3))).astype(int)
    assert len(np.unique(X, axis=0)) < n / 3  # the rows do repeat
    every_run = cv_scores(X, y)
    np.testing.assert_allclose(cv_scores_distinct(X, y), every_run, rtol=0, atol=1e-9)


def test_features_read_in_batches_of_runs_equal_one_read(synth):
    """The boards read the population a batch of runs at a time: every batch size gives the
    table one read of every run gives, row for row."""
    whole = prefix_features(runner(synth), "synth", fraction=0.5, min_steps=2, batch_runs=10**9)
    for batch in (1, 7, 59):
        batched = prefix_features(runner(synth), "synth", fraction=0.5, min_steps=2, batch_runs=batch)
        assert list(batched.run_ids) == list(whole.run_ids)
        np.testing.assert_array_equal(batched.y, whole.y)
        assert batched.table.reset_index(drop=True).equals(whole.table.reset_index(drop=True)), batch
        # What the entrants read and no more: numbers only, the ids and outcomes beside the table.
        assert list(batched.table.columns) == [*FEATURE_COLUMNS, "run_steps", "prefix_steps"], batch
        assert all(dtype.kind in "fi" for dtype in batched.table.dtypes), batched.table.dtypes


def test_a_sets_runs_are_taken_among_the_populations_runs_with_their_labels():
    """Each set keeps its own runs that are in the population, in its own order, with the
    population's label of each; a run outside it (not in the features) is left out."""
    import pandas as pd

    from auditatlas.analyses.run_detection import prediction_set_entrants
    from auditatlas.analyses.run_features import RunFeatures

    features = RunFeatures(np.array(["a", "b", "c"], dtype=object), np.array([0, 1, 0]), pd.DataFrame(), 1.0)
    rows = pd.DataFrame({"set_id": ["S1", "S1", "S1", "S2"], "run_id": ["b", "x", "a", "c"],
                         "score": [0.9, 0.5, 0.1, 0.3]})
    out = prediction_set_entrants(lambda name, params: rows, "k", features)
    assert list(out) == ["S1", "S2"]
    assert list(out["S1"].run_ids) == ["b", "a"] and list(out["S1"].y) == [1, 0]
    assert list(out["S1"].scores) == [0.9, 0.1]
    assert list(out["S2"].run_ids) == ["c"] and list(out["S2"].y) == [0] and list(out["S2"].scores) == [0.3]
