"""Propagation heatmap, chains and recall by chain role, on an authored store worked out by hand.

The fixture (corpus ``fx``; actions OC, SC, OI, AD, OP as MAADBench code names):

run A1 (backbone A)  P1: 0 OC ok | 1 SC FAIL | 2 OI unlabeled | 3 AD FAIL | 4 OP FAIL
                     P2: 5 OC ok | 6 SC FAIL | 7 OI ok       | 8 AD ok          (one failure)
run A2 (backbone A)  P1: 0 SC FAIL | 1 SC FAIL | 2 AD FAIL                       (SC twice)
run B1 (backbone B)  P1: 0 OC FAIL | 1 SC ok | 2 AD FAIL
                     P2: 3 OC ok   | 4 SC ok | 5 AD ok

OI never fails (its one step inside a chain is unlabeled). Two more corpora cannot form chains:
``ww`` labels one decisive step per run (Who&When style), ``tb`` has no step labels.
Every expected number below was counted by hand from this table.
"""
from __future__ import annotations

import math

import pandas as pd
import pytest

from auditatlas.analyses import anomaly_propagation as P
from auditatlas.chains import step_roles
from auditatlas.store import write_source
from queries import runner

OC, SC, OI, AD, OP = "OBSERVE_CLUE", "SOLVE_CLUE", "OBSERVE_ITEM", "APPLY_DELTA", "OBSERVE_PUZZLE"

# (run, backbone, [(scope, action, label)]) in step order
RUNS = [
    ("fx:A1", "A", [("P1", OC, 0), ("P1", SC, 1), ("P1", OI, None), ("P1", AD, 1), ("P1", OP, 1),
                    ("P2", OC, 0), ("P2", SC, 1), ("P2", OI, 0), ("P2", AD, 0)]),
    ("fx:A2", "A", [("P1", SC, 1), ("P1", SC, 1), ("P1", AD, 1)]),
    ("fx:B1", "B", [("P1", OC, 1), ("P1", SC, 0), ("P1", AD, 1),
                    ("P2", OC, 0), ("P2", SC, 0), ("P2", AD, 0)]),
]

# Own labels and scores of set s1 on every fx step (flags are the five top scores plus one tie).
S1_SCORES = {("fx:A1", 1): 0.9, ("fx:A2", 2): 0.8, ("fx:B1", 0): 0.7, ("fx:A1", 4): 0.6, ("fx:A2", 1): 0.5,
             ("fx:A1", 0): 0.5, ("fx:A1", 3): 0.4, ("fx:A1", 6): 0.3, ("fx:A2", 0): 0.2, ("fx:B1", 2): 0.1}
S1_FLAGS = {("fx:A1", 1), ("fx:A2", 2), ("fx:B1", 0), ("fx:A1", 4), ("fx:A2", 1), ("fx:A1", 0)}


def _tables() -> dict:
    runs, steps = [], []
    for run_id, backbone, trace in RUNS:
        runs.append({"run_id": run_id, "corpus": "fx", "backbone": backbone, "outcome": "failure",
                     "n_steps": len(trace), "difficulty": "easy"})
        for i, (scope, action, label) in enumerate(trace):
            steps.append({"run_id": run_id, "corpus": "fx", "step_idx": i, "action": action, "scope": scope,
                          "scope_success": False, "label": label,
                          "label_source": "verifier" if label is not None else "unlabeled"})
    # Who&When style: the run is the scope, one decisive step.
    runs.append({"run_id": "ww:1", "corpus": "ww", "outcome": "failure", "n_steps": 3})
    for i in range(3):
        steps.append({"run_id": "ww:1", "corpus": "ww", "step_idx": i, "action": "assistant", "scope": "ww:1",
                      "scope_success": False, "label": int(i == 1), "label_source": "human_decisive_step"})
    # tau-bench style: no step labels at all.
    runs.append({"run_id": "tb:1", "corpus": "tb", "outcome": "success", "n_steps": 2})
    for i in range(2):
        steps.append({"run_id": "tb:1", "corpus": "tb", "step_idx": i, "action": "user", "scope": "tb:1",
                      "scope_success": True, "label": None, "label_source": "none"})

    fx_steps = [(r, i) for r, _, trace in RUNS for i in range(len(trace))]
    sets = [
        {"set_id": "s1", "corpus": "fx", "method": "m1", "granularity": "step", "seed": 0},
        {"set_id": "s2", "corpus": "fx", "method": "m1", "granularity": "step", "seed": 1},
        {"set_id": "s3", "corpus": "fx", "method": "m2", "granularity": "step", "seed": 0},
        {"set_id": "r1", "corpus": "fx", "method": "m3", "granularity": "run", "seed": 0},
    ]
    anomalies = {(r, i) for r, _, trace in RUNS for i, (_, _, lab) in enumerate(trace) if lab == 1}
    preds = []
    for key in fx_steps:
        run_id, i = key
        preds.append({"set_id": "s1", "corpus": "fx", "run_id": run_id, "step_idx": i,
                      "score": S1_SCORES.get(key, 0.0), "pred_label": int(key in S1_FLAGS), "split": "test"})
        # s2 flags every anomaly and nothing else; its row for A1 step 1 is a training row.
        preds.append({"set_id": "s2", "corpus": "fx", "run_id": run_id, "step_idx": i, "score": float(key in anomalies),
                      "pred_label": int(key in anomalies), "split": "train" if key == ("fx:A1", 1) else "test"})
        # s3 has scores but no decision of its own.
        preds.append({"set_id": "s3", "corpus": "fx", "run_id": run_id, "step_idx": i,
                      "score": S1_SCORES.get(key, 0.0), "pred_label": None, "split": "all"})
    preds.append({"set_id": "r1", "corpus": "fx", "run_id": "fx:A1", "score": 1.0, "pred_label": 1, "split": "test"})
    return {"runs": runs, "steps": steps, "prediction_sets": sets, "predictions": preds}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("propagation-fixture")
    write_source(root, "fixture", _tables())
    return root


def _cell(cells: pd.DataFrame, backbone: str, src: str, later: str) -> pd.Series:
    row = cells[(cells.backbone == backbone) & (cells.src_action == src) & (cells.later_action == later)]
    assert len(row) == 1, (backbone, src, later)
    return row.iloc[0]


# --- which corpora form chains -----------------------------------------------------------------


def test_chain_status_names_corpora_without_chains(store):
    corpora = P.load_corpora(runner(store), {}).set_index("corpus")
    assert corpora.loc["fx", "chains"] == 3
    assert corpora.loc["fx", "failed_steps"] == 9
    assert corpora.loc["ww", "chains"] == 0 and corpora.loc["ww", "max_failures_in_scope"] == 1
    status = P.chain_status(corpora.reset_index())
    assert status.chain_corpora == ["fx"]
    assert "single decisive step" in status.reasons["ww"] and "human_decisive_step" in status.reasons["ww"]
    assert "no labels" in status.reasons["tb"]


def test_a_slice_without_chains_has_none(store):
    status = P.chain_status(P.load_corpora(runner(store), {"corpus": ["ww", "tb"]}))
    assert not status.has_chains
    assert P.load_heatmap(runner(store), {"corpus": ["ww"]}).empty
    # Mixed slice: ww's steps are counted by the sources query but left out of the map.
    sources = P.step_counts(runner(store), {})
    assert set(sources.corpus) == {"fx", "ww", "tb"}
    assert "(none)" not in set(P.load_heatmap(runner(store), {}).backbone)


# --- the heatmap ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cells(store):
    return P.load_heatmap(runner(store), {})


def test_heatmap_rows_and_columns_are_the_slice_actions(cells):
    assert sorted(cells.backbone.unique()) == ["A", "B"]  # ww and tb form no chains: left out
    assert list(P.action_order(cells.src_action)) == [OC, SC, OI, AD, OP]
    assert len(cells) == 2 * 5 * 5


@pytest.mark.parametrize("backbone,src,later,failed,followed", [
    # backbone A: SC failed 4x (A1.1, A1.6, A2.0, A2.1)
    ("A", SC, AD, 4, 3),   # A1.1 -> AD 3; A2.0, A2.1 -> AD 2; A1.6 is alone in P2
    ("A", SC, OP, 4, 1),   # A1.1 -> OP 4
    ("A", SC, SC, 4, 1),   # A2.0 -> SC 1 (two failures of the same action in one scope)
    ("A", SC, OI, 4, 0),   # the OI after A1.1 is unlabeled: not a failure
    ("A", AD, OP, 2, 1),   # A1.3 -> OP 4; A2.2 is last
    ("A", AD, AD, 2, 0),
    ("A", OP, OP, 1, 0),
    ("B", OC, AD, 1, 1),   # B1.0 -> AD 2
    ("B", OC, SC, 1, 0),   # B1's SC did not fail
])
def test_heatmap_cells_by_hand(cells, backbone, src, later, failed, followed):
    cell = _cell(cells, backbone, src, later)
    assert (cell.failed, cell.followed) == (failed, followed)
    assert cell.rate == pytest.approx(followed / failed)


@pytest.mark.parametrize("backbone,src", [("A", OI), ("A", OC), ("B", SC), ("B", OI), ("B", OP)])
def test_a_source_action_that_never_failed_has_no_rate(cells, backbone, src):
    rows = cells[(cells.backbone == backbone) & (cells.src_action == src)]
    assert (rows.failed == 0).all() and rows.rate.isna().all()


def test_possible_pairs_come_from_the_store(cells):
    """Possible = some scope has the later action after the source action, whatever the labels."""
    possible = {(s, a) for s, a, p in zip(cells.src_action, cells.later_action, cells.possible) if p}
    expected = {(OC, SC), (OC, OI), (OC, AD), (OC, OP), (SC, SC), (SC, OI), (SC, AD), (SC, OP),
                (OI, AD), (OI, OP), (AD, OP)}
    assert possible == expected
    # Same for both backbones: the store decides, not the backbone.
    assert cells.groupby(["src_action", "later_action"])["possible"].nunique().max() == 1


def test_impossible_pairs_never_hold_a_count(cells):
    assert (cells.loc[~cells.possible, "followed"] == 0).all()


# --- chains and roles ---------------------------------------------------------------------------


def test_chain_browser_lists_every_chain(store):
    rows = P.chains(runner(store), {})
    assert P.total_rows(rows) == 3
    got = {(r.run_id, r.scope): (r.length, list(r.steps), list(r.actions), r.origin_action, r.origin_step)
           for r in rows.itertuples()}
    assert got == {
        ("fx:A1", "P1"): (3, [1, 3, 4], [SC, AD, OP], SC, 1),
        ("fx:A2", "P1"): (3, [0, 1, 2], [SC, SC, AD], SC, 0),
        ("fx:B1", "P1"): (2, [0, 2], [OC, AD], OC, 0),
    }


@pytest.mark.parametrize("origins,low,high,expected", [
    ([SC], None, None, {"fx:A1", "fx:A2"}),
    ([OC], None, None, {"fx:B1"}),
    ([], 3, None, {"fx:A1", "fx:A2"}),
    ([], None, 2, {"fx:B1"}),
    ([SC], 2, 2, set()),
])
def test_chain_browser_filters(store, origins, low, high, expected):
    rows = P.chains(runner(store), {}, origins, low, high)
    assert set(rows.run_id) == expected
    assert P.total_rows(rows) == len(expected)


def test_chain_browser_pages_in_sql(store):
    pages = [P.chains(runner(store), {}, page=n, page_size=1) for n in (1, 2, 3, 4)]
    assert [list(p.run_id) for p in pages] == [["fx:A1"], ["fx:A2"], ["fx:B1"], []]
    assert all(P.total_rows(p) == 3 for p in pages[:3])


def test_chain_lengths_per_backbone(store):
    lengths = P.chain_lengths(runner(store), {})
    per = lengths.groupby(["backbone", "length"])["chains"].sum().to_dict()
    assert per == {("A", 3): 2, ("B", 2): 1}


def test_chain_lengths_follow_the_slice(store):
    lengths = P.chain_lengths(runner(store), {"backbone": ["B"]})
    assert lengths[["backbone", "origin_action", "length", "chains"]].values.tolist() == [["B", OC, 2, 1]]


@pytest.mark.parametrize("backbone,src,later,expected", [
    ("A", SC, AD, [("fx:A1", 1), ("fx:A2", 0), ("fx:A2", 1)]),
    ("A", SC, SC, [("fx:A2", 0)]),
    ("A", AD, OP, [("fx:A1", 3)]),
    ("A", SC, OI, []),
    ("B", OC, AD, [("fx:B1", 0)]),
])
def test_cell_drill_down_lists_the_numerator(store, backbone, src, later, expected):
    rows = P.cell_chains(runner(store), {}, backbone, src, later)
    assert list(zip(rows.run_id, rows.source_step)) == expected
    assert P.total_rows(rows) == len(expected)
    if expected:
        table = P.chain_table(rows, "source_step")
        first = table.iloc[0]
        assert first.explorer == f"/explorer?run={first.run_id.replace(':', '%3A')}&step={first.source_step}"


def test_cell_drill_down_pages(store):
    page2 = P.cell_chains(runner(store), {}, "A", SC, AD, page=2, page_size=2)
    assert list(zip(page2.run_id, page2.source_step)) == [("fx:A2", 1)]
    assert P.total_rows(page2) == 3
    assert list(page2.iloc[0].steps) == [0, 1, 2]


def test_explorer_link_is_url_encoded():
    from auditatlas.views import explorer_url

    assert explorer_url("maadbench-sim:run_1/2026 room&x", 7) == \
        "/explorer?run=maadbench-sim%3Arun_1%2F2026+room%26x&step=7"


# --- recall by role -----------------------------------------------------------------------------

# Anomalies of fx with their role (origin / mid / down / None = alone in its scope):
#   A1.1 SC origin  A1.3 AD mid  A1.4 OP down  A1.6 SC None
#   A2.0 SC origin  A2.1 SC mid  A2.2 AD down
#   B1.0 OC origin  B1.2 AD down
# s1 flags A1.1, A1.4, A2.1, A2.2, B1.0 (and the normal step A1.0).
# Action recall over all anomalies: SC 2/4, AD 1/3, OP 1/1, OC 1/1.
S1_EXPECTED = {  # role: (anomalies, flagged, isolation recall)
    "origin": (3, 2, (1 / 2 + 1 / 2 + 1) / 3),
    "mid": (2, 1, (1 / 3 + 1 / 2) / 2),
    "down": (3, 2, (1 + 1 / 3 + 1 / 3) / 3),
}


def _per_set(store, top_k=None) -> pd.DataFrame:
    return P.role_recall(P.role_recall_counts(runner(store), {}, top_k))


def test_role_recall_with_own_labels(store):
    per = _per_set(store)
    assert set(per.set_id) == {"s1", "s2"}  # s3 has no labels of its own; r1 is run-level
    s1 = per[per.set_id == "s1"].set_index("role")
    for role, (n, flagged, iso) in S1_EXPECTED.items():
        row = s1.loc[role]
        assert (row.anomalies, row.flagged) == (n, flagged)
        assert row.recall == pytest.approx(flagged / n)
        assert row.isolation_recall == pytest.approx(iso)
        assert row.delta == pytest.approx(flagged / n - iso)
    assert (s1.scored_steps.iloc[0], s1.flagged_steps.iloc[0]) == (18, 6)


def test_role_recall_leaves_training_rows_out(store):
    s2 = _per_set(store).query("set_id == 's2'").set_index("role")
    assert s2.loc["origin", "anomalies"] == 2  # A1.1 is a training row of s2
    assert (s2.recall == 1).all() and (s2.delta == 0).all()
    assert s2.scored_steps.iloc[0] == 17


def test_role_recall_top_k_with_a_tie_at_the_cut(store):
    """25% of 18 scored steps: m = ceil(4.5) = 5; the 5th score (0.5) is shared by A2.1 and the
    normal step A1.0, so both are flagged: the same anomalies as s1's own labels."""
    per = _per_set(store, 25)
    assert set(per.set_id) == {"s1", "s2", "s3"}
    for set_id in ("s1", "s3"):
        rows = per[per.set_id == set_id].set_index("role")
        for role, (n, flagged, iso) in S1_EXPECTED.items():
            assert (rows.loc[role, "anomalies"], rows.loc[role, "flagged"]) == (n, flagged)
            assert rows.loc[role, "isolation_recall"] == pytest.approx(iso)
        assert rows.flagged_steps.iloc[0] == 6


def test_role_recall_top_k_small(store):
    """10% of 18: m = ceil(1.8) = 2: A1.1 (SC, origin) and A2.2 (AD, down).
    Action recall: SC 1/4, AD 1/3, OP 0, OC 0."""
    s1 = _per_set(store, 10).query("set_id == 's1'").set_index("role")
    assert s1.loc["origin", "recall"] == pytest.approx(1 / 3)
    assert s1.loc["mid", "recall"] == 0
    assert s1.loc["down", "recall"] == pytest.approx(1 / 3)
    assert s1.loc["origin", "isolation_recall"] == pytest.approx((1 / 4 + 1 / 4 + 0) / 3)
    assert s1.loc["mid", "isolation_recall"] == pytest.approx((1 / 3 + 1 / 4) / 2)
    assert s1.loc["down", "isolation_recall"] == pytest.approx((0 + 1 / 3 + 1 / 3) / 3)
    assert s1.flagged_steps.iloc[0] == 2


def test_role_averages_weigh_each_detector_once(store):
    per = _per_set(store)
    sets = P.step_sets(runner(store), {})
    assert set(sets.set_id) == {"s1", "s2", "s3"}
    avg = P.role_averages(per, sets).set_index("role")
    # Only m1 has own labels (s1 and s2, averaged first): origin (2/3 + 1) / 2.
    assert avg.loc["origin", "detectors"] == 1
    assert avg.loc["origin", "recall"] == pytest.approx((2 / 3 + 1) / 2)
    assert avg.loc["mid", "delta"] == pytest.approx(((1 / 2 - 5 / 12) + 0) / 2)


def _no_store(name, params=None):
    raise AssertionError(f"a bad top-k% must be refused before any query runs ({name})")


def test_top_k_must_be_a_share():
    with pytest.raises(ValueError):
        P.role_recall_counts(_no_store, {}, 0)
    with pytest.raises(ValueError):
        P.role_recall_counts(_no_store, {}, 101)


def test_sql_roles_agree_with_chains_module(store):
    """The SQL's roles (through recall rows of s2's test rows plus its training row excluded) are
    checked by hand above; here every fx run's roles from auditatlas.chains match the chain rows."""
    chains = P.chains(runner(store), {})
    for run_id, _, trace in RUNS:
        roles = step_roles([(i, scope, label) for i, (scope, _, label) in enumerate(trace)])
        from_sql = {}
        for r in chains[chains.run_id == run_id].itertuples():
            steps = list(r.steps)
            from_sql[steps[0]] = "origin"
            from_sql[steps[-1]] = "down"
            from_sql.update({s: "mid" for s in steps[1:-1]})
        assert roles == from_sql, run_id


# --- failure modes and silent failures ------------------------------------------------------------


def test_failure_modes_and_silent_counts(store):
    modes = P.failure_modes(P.failure_mode_counts(runner(store), {"corpus": ["fx"]}))
    per = modes.groupby("backbone")["failed_steps"].sum().to_dict()
    assert per == {"A": 7, "B": 2}
    assert modes.groupby("backbone")["share_pct"].sum().round(6).tolist() == [100.0, 100.0]
    silent = P.silent_counts(runner(store), {"corpus": ["fx"]})
    assert silent.action_failures.sum() == 9 and silent.silent_action_failures.sum() == 0
    assert silent.loud_action_failures.sum() == 9


# --- the same definitions on the simulated corpus, against a brute-force reference ---------------


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    from auditatlas.ingest.demo import build_demo

    root = tmp_path_factory.mktemp("propagation-demo")
    build_demo(root, rooms=150, seed=3)
    return root


def _brute_force_cells(steps: pd.DataFrame) -> dict:
    """The spec's definition, literally: for every failed source step s and action a, is
    there a later failed step of action a in s's scope?"""
    counts: dict = {}
    for (_, _), scope in steps.groupby(["run_id", "scope"], dropna=False):
        failed = scope[scope.label == 1].sort_values("step_idx")
        for s in failed.itertuples():
            later = set(failed.loc[failed.step_idx > s.step_idx, "action"])
            key = (s.backbone, s.action)
            n, hits = counts.get(key, (0, {}))
            for a in later:
                hits[a] = hits.get(a, 0) + 1
            counts[key] = (n + 1, hits)
    return counts


def test_heatmap_matches_brute_force_on_the_simulated_corpus(demo_store):
    import queries

    steps = queries.connect(demo_store).execute(
        "SELECT run_id, scope, step_idx, action, label, backbone FROM steps").df()
    expected = _brute_force_cells(steps)
    cells = P.load_heatmap(runner(demo_store), {})
    assert cells.followed.sum() > 0
    possible = set()  # any label: some step of a after some step of src in one scope
    for _, scope in steps.groupby(["run_id", "scope"], dropna=False):
        acts = list(scope.sort_values("step_idx").action)
        possible |= {(acts[i], acts[j]) for i in range(len(acts)) for j in range(i + 1, len(acts))}
    assert {(s, a) for s, a, p in zip(cells.src_action, cells.later_action, cells.possible) if p} == \
        {(s, a) for s, a in possible if s in set(cells.src_action) and a in set(cells.src_action)}
    assert not cells.possible.all()  # e.g. nothing follows OBSERVE_PUZZLE within its puzzle
    for r in cells.itertuples():
        n, hits = expected.get((r.backbone, r.src_action), (0, {}))
        assert r.failed == n
        assert r.followed == hits.get(r.later_action, 0)
        if n:
            assert math.isclose(r.rate, hits.get(r.later_action, 0) / n)


def test_chain_roles_match_chains_module_on_the_simulated_corpus(demo_store):
    import queries

    steps = queries.connect(demo_store).execute("SELECT run_id, scope, step_idx, label FROM steps").df()
    chains = P.chains(runner(demo_store), {}, page_size=100_000)
    assert len(chains) == P.total_rows(chains) > 20
    from_sql: dict = {}
    for r in chains.itertuples():
        steps_ = list(r.steps)
        roles = {steps_[0]: "origin", steps_[-1]: "down", **{s: "mid" for s in steps_[1:-1]}}
        from_sql.setdefault(r.run_id, {}).update(roles)
    for run_id, run in steps.groupby("run_id"):
        labels = [None if pd.isna(v) else int(v) for v in run.label]
        assert step_roles(zip(run.step_idx, run.scope, labels)) == from_sql.get(run_id, {}), run_id


def test_sql_roles_match_chains_module_on_the_simulated_corpus(demo_store):
    """Recall-by-role rows of a set that flags exactly the anomalies count, per role and action,
    the steps auditatlas.chains gives each role."""
    import queries

    steps = queries.connect(demo_store).execute(
        "SELECT run_id, scope, step_idx, action, label FROM steps ORDER BY run_id, step_idx").df()
    preds = [{"set_id": "oracle", "corpus": "maadbench-sim", "run_id": r.run_id, "step_idx": int(r.step_idx),
              "score": float(hit), "pred_label": int(hit), "split": "test"}
             for r, hit in zip(steps.itertuples(), steps.label.fillna(0).eq(1))]
    write_source(demo_store, "predictions-oracle", {
        "prediction_sets": [{"set_id": "oracle", "corpus": "maadbench-sim", "method": "oracle", "granularity": "step"}],
        "predictions": preds})
    expected: dict = {}
    for _run_id, run in steps.groupby("run_id"):
        labels = [None if pd.isna(v) else int(v) for v in run.label]
        roles = step_roles(zip(run.step_idx, run.scope, labels))
        for idx, action, label in zip(run.step_idx, run.action, labels):
            if label == 1:
                key = (roles.get(int(idx)), action)
                expected[key] = expected.get(key, 0) + 1
    rows = P.role_recall_counts(runner(demo_store), {})
    hits = rows[rows.anomalous]
    got = {(None if pd.isna(r.role) else r.role, r.action): r.steps for r in hits.itertuples()}
    assert got == expected
    assert (hits.flagged == hits.steps).all() and (rows[~rows.anomalous].flagged == 0).all()
    assert rows.steps.sum() == len(steps)  # every step scored once, as a test row
    per = P.role_recall(rows)
    assert (per.recall == 1).all() and (per.delta.abs() < 1e-12).all()


# --- the cubes the heatmap is answered from (queries/derived.py) --------------------------------

def _slices(store) -> list[dict]:
    """Slices of the app store that cut across its cells: none, one backbone, two, an outcome,
    and three columns at once (values read from the runs, by hand)."""
    import queries

    con = queries.connect(store)
    try:
        values = lambda col: [v for (v,) in con.execute(f"SELECT DISTINCT {col} FROM runs WHERE {col} IS NOT NULL "
                                                        f"ORDER BY 1").fetchall()]
        backbones, temps, outcomes = values("backbone"), values("temperature"), values("outcome")
    finally:
        con.close()
    return [{}, {"backbone": backbones[:1]}, {"backbone": backbones[1:3]}, {"outcome": outcomes[:1]},
            {"corpus": ["maadbench-sim"], "backbone": backbones[:2], "temperature": [str(temps[0])]}]


@pytest.mark.parametrize("name", ["propagation_heatmap", "propagation_sources"])
def test_the_cubes_add_up_to_the_live_heatmap_on_any_slice(name, monkeypatch):
    import queries
    from stores import shared_store

    store = shared_store("app")
    prepared: list[str] = []
    prepare = queries.named.prepare
    monkeypatch.setattr(queries.named, "prepare", lambda q, p: prepared.append(q.name) or prepare(q, p))
    for slice_ in _slices(store):
        from_cube = queries.run(name, {"slice": slice_}, root=store)
        assert prepared[-1] == f"{name}_cube", (slice_, prepared[-1])
        with monkeypatch.context() as m:
            m.setattr(queries.twins, "TWINS", {})
            live = queries.run(name, {"slice": slice_}, root=store)
        assert prepared[-1] == name
        assert len(live) > 0, slice_
        pd.testing.assert_frame_equal(from_cube, live)
