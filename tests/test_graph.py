"""The run graph model (auditatlas/graph.py) and its offline drawing (components/trace_graph.py).

Expected values are worked out by hand on authored runs, or read independently from the raw
Who&When files and the CatchBench judge files (never from the code under test).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from auditatlas import graph as tg
from conftest import WHOWHEN

# An authored two-puzzle run, worked out by hand:
#   P1: 0 OC ok, 1 SC fail, 2 OI fail, 3 AD fail, 4 OP ok     -> chain 1,2,3 (origin, mid, down)
#   P2: 5 OC unlabeled, 6 SC fail, 7 OI ok                     -> one failure: no chain
STEPS = pd.DataFrame({
    "step_idx": range(8),
    "action": ["OBSERVE_CLUE", "SOLVE_CLUE", "OBSERVE_ITEM", "APPLY_DELTA", "OBSERVE_PUZZLE",
               "OBSERVE_CLUE", "SOLVE_CLUE", "OBSERVE_ITEM"],
    "agent": ["observer", "clue_solver", "observer", "item_manager", "observer", "observer", "clue_solver", "observer"],
    "scope": ["P1"] * 5 + ["P2"] * 3,
    "label": pd.array([0, 1, 1, 1, 0, None, 1, 0], dtype="Int8"),
    "label_source": ["verifier"] * 5 + ["unlabeled", "verifier", "verifier"],
})
EDGES = pd.DataFrame(
    [(0, 1, "data", "observed"), (1, 2, "data", "observed"), (2, 3, "data", "observed"), (0, 4, "data", "observed"),
     (2, 4, "data", "observed"), (3, 4, "data", "observed"), (4, 5, "puzzle_sequence", "modeled"),
     (5, 6, "data", "observed"), (6, 7, "data", "observed")],
    columns=["src_idx", "dst_idx", "kind", "provenance"],
)
# A prediction set's scores with the store's ranks (1 = highest; worked out by hand).
SCORES = pd.DataFrame({
    "step_idx": range(8),
    "score": [0.1, 0.9, 0.3, 0.8, 0.7, 0.95, 0.2, 0.05],
    "rank": [7, 2, 5, 3, 4, 1, 6, 8],
})


def authored() -> tg.nx.MultiDiGraph:
    return tg.build(STEPS, EDGES, "authored:run")


def test_nodes_edges_and_ground_truth():
    g = authored()
    assert g.number_of_nodes() == 8
    assert g.number_of_edges() == 9
    truths = [g.nodes[i]["truth"] for i in range(8)]
    assert truths == ["normal", "anomaly", "anomaly", "anomaly", "normal", "unlabeled", "anomaly", "normal"]
    assert not any(g.nodes[i]["decisive"] for i in range(8))
    assert g.edges[4, 5, "puzzle_sequence"]["provenance"] == "modeled"


def test_unlabeled_is_never_normal():
    assert tg.truth_of(None) == tg.UNLABELED
    assert tg.truth_of(float("nan")) == tg.UNLABELED
    assert tg.truth_of(pd.NA) == tg.UNLABELED
    assert tg.truth_of(0) == tg.NORMAL and tg.truth_of(1) == tg.ANOMALY
    assert tg.outcome_of(tg.UNLABELED, True) is None and tg.outcome_of(tg.UNLABELED, False) is None


def test_chain_roles_per_scope():
    g = authored()
    roles = {i: g.nodes[i]["role"] for i in range(8)}
    assert roles == {0: None, 1: "origin", 2: "mid", 3: "down", 4: None, 5: None, 6: None, 7: None}
    assert tg.chain_length(g) == 3


def test_top_k_flags():
    g = tg.mark(authored(), SCORES, tg.DecisionRule(top_k=3))
    # top 3 by rank: steps 5 (unlabeled), 1, 3.
    assert {i for i in range(8) if g.nodes[i]["flagged"]} == {1, 3, 5}
    assert [g.nodes[i]["outcome"] for i in range(8)] == ["TN", "TP", "FN", "TP", "TN", None, "FN", "TN"]
    assert tg.confusion(g) == {"TP": 2, "FP": 0, "FN": 2, "TN": 3, "flagged_unlabeled": 1}
    assert g.nodes[3]["score"] == 0.8 and g.nodes[3]["rank"] == 3


def test_threshold_flags():
    g = tg.mark(authored(), SCORES, tg.DecisionRule(threshold=0.5))
    # score >= 0.5: steps 1, 3, 4, 5.
    assert tg.confusion(g) == {"TP": 2, "FP": 1, "FN": 2, "TN": 2, "flagged_unlabeled": 1}
    assert g.nodes[4]["outcome"] == "FP"


def test_no_detector_means_no_outcome():
    g = tg.mark(authored(), None, None)
    assert all(g.nodes[i]["outcome"] is None and not g.nodes[i]["flagged"] for i in range(8))


def test_decision_rule_needs_exactly_one_cut():
    with pytest.raises(ValueError):
        tg.DecisionRule()
    with pytest.raises(ValueError):
        tg.DecisionRule(top_k=1, threshold=0.5)


def test_collapse_one_scope():
    g = tg.mark(authored(), SCORES, tg.DecisionRule(top_k=3))
    c = tg.collapse(g, ["P1"])
    # scope:P1 + steps 5, 6, 7; P1's six inner edges vanish, 4->5 becomes scope:P1->5.
    assert sorted(map(str, c.nodes)) == ["5", "6", "7", "scope:P1"]
    assert c.number_of_edges() == 3
    assert c.has_edge("scope:P1", 5)
    p1 = c.nodes["scope:P1"]
    assert (p1["first_idx"], p1["last_idx"], p1["n_steps"], p1["n_anomalies"], p1["n_unlabeled"]) == (0, 4, 5, 3, 0)
    assert p1["n_flagged"] == 2 and p1["outcomes"] == {"TP": 2, "FN": 1, "TN": 2}
    assert p1["truth"] == "anomaly"
    both = tg.collapse(g, ["P1", "P2"])
    assert both.number_of_nodes() == 2 and both.number_of_edges() == 1
    assert both.nodes["scope:P2"]["truth"] == "anomaly"


def test_collapsed_scope_with_unlabeled_step_is_not_normal():
    steps = STEPS.assign(label=pd.array([0, 0, 0, 0, 0, None, 0, 0], dtype="Int8"))
    c = tg.collapse(tg.build(steps, EDGES, "r"), ["P2"])
    assert c.nodes["scope:P2"]["truth"] == "unlabeled"


def test_layout_is_trace_order_by_scope_lane():
    pos = tg.layout(authored(), dx=1, dy=1)
    assert [pos[i] for i in range(8)] == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 1), (6, 1), (7, 1)]
    c = tg.collapse(authored(), ["P1"])
    pos = tg.layout(c, dx=1, dy=1)
    assert pos["scope:P1"] == (1, 0) and pos[5] == (3, 1) and pos[7] == (5, 1)  # a box takes 3 columns
    # Collapsed scopes share the top lane; open ones follow below in the order met.
    c = tg.collapse(authored(), ["P2"])
    pos = tg.layout(c, dx=1, dy=1)
    assert pos["scope:P2"] == (6, 0) and [pos[i] for i in range(5)] == [(i, 1) for i in range(5)]
    both = tg.collapse(authored(), ["P1", "P2"])
    assert tg.layout(both, dx=1, dy=1) == {"scope:P1": (1, 0), "scope:P2": (4, 0)}
    assert tg.lane_count(both) == 1 and tg.lane_count(authored()) == 2


def test_packed_layout_puts_each_scope_on_a_line_of_its_own():
    """Scopes that take turns (P1 steps 0-4, then P2 steps 5-7) read like lines of text."""
    g = authored()
    assert tg.lanes_take_turns(g)
    pos = tg.layout(g, dx=1, dy=1, pack=True)
    assert [pos[i] for i in range(8)] == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (0, 1), (1, 1), (2, 1)]
    # A collapsed scope takes its turn too: P1 open on the first line, P2's box (3 columns wide,
    # placed at its centre) on the next, from the left edge.
    pos = tg.layout(tg.collapse(g, ["P2"]), dx=1, dy=1, pack=True)
    assert [pos[i] for i in range(5)] == [(i, 0) for i in range(5)] and pos["scope:P2"] == (1, 1)
    pos = tg.layout(tg.collapse(g, ["P1"]), dx=1, dy=1, pack=True)
    assert pos["scope:P1"] == (1, 0) and [pos[i] for i in (5, 6, 7)] == [(0, 1), (1, 1), (2, 1)]
    # Three scopes of three steps, the middle one open: box, steps, box, one line each in trace
    # order (unpacked, both boxes share the top lane: Q1 at columns 0-2, Q3 at 6-8).
    steps = pd.DataFrame({"step_idx": range(9), "scope": ["Q1"] * 3 + ["Q2"] * 3 + ["Q3"] * 3, "action": "X",
                          "agent": "a", "label": pd.array([0] * 9, dtype="Int8")})
    c = tg.collapse(tg.build(steps, EDGES.head(0), "r"), ["Q1", "Q3"])
    assert tg.layout(c, dx=1, dy=1) == {"scope:Q1": (1, 0), 3: (3, 1), 4: (4, 1), 5: (5, 1), "scope:Q3": (7, 0)}
    assert tg.layout(c, dx=1, dy=1, pack=True) == {"scope:Q1": (1, 0), 3: (0, 1), 4: (1, 1), 5: (2, 1),
                                                   "scope:Q3": (1, 2)}


def test_overlapping_lanes_keep_their_common_columns():
    """Lanes that interleave (A B A B) are not packed: a step above another happened at the same point."""
    steps = pd.DataFrame({"step_idx": range(4), "scope": ["A", "B", "A", "B"], "action": "X", "agent": "a",
                          "label": pd.array([0, 0, 0, 0], dtype="Int8")})
    g = tg.build(steps, EDGES.head(0), "r")
    assert not tg.lanes_take_turns(g)
    assert tg.layout(g, dx=1, dy=1, pack=True) == tg.layout(g, dx=1, dy=1) == {
        0: (0, 0), 1: (1, 1), 2: (2, 0), 3: (3, 1)}
    # One collapsed scope whose steps span the open one's: the box lane overlaps it.
    wide = steps.assign(scope=["A", "B", "B", "A"])
    c = tg.collapse(tg.build(wide, EDGES.head(0), "r"), ["A"])
    assert not tg.lanes_take_turns(c)


def test_long_runs_start_collapsed():
    n = 360  # three scopes of 120 steps, over the 300-step threshold
    steps = pd.DataFrame({"step_idx": range(n), "scope": [f"P{i // 120 + 1}" for i in range(n)],
                          "label": pd.array([0] * n, dtype="Int8"), "action": "X", "agent": "a"})
    edges = pd.DataFrame({"src_idx": range(n - 1), "dst_idx": range(1, n), "kind": "data", "provenance": "observed"})
    g = tg.build(steps, edges, "long")
    assert tg.default_collapsed(g) == ["P1", "P2", "P3"]
    assert tg.default_collapsed(g, keep_open=["P2"]) == ["P1", "P3"]
    c = tg.collapse(g, tg.default_collapsed(g, keep_open=["P2"]))
    assert c.number_of_nodes() == 1 + 120 + 1
    # Chain edges crossing a scope boundary: P1 -> 120, 239 -> P3; 119 inner P2 edges.
    assert c.number_of_edges() == 2 + 119
    short = tg.build(steps.head(300), edges.head(299), "short")
    assert tg.default_collapsed(short) == []


def test_inferred_context_edges_hidden_by_default():
    n = 5
    steps = pd.DataFrame({"step_idx": range(n), "label": pd.array([0, 0, 1, 0, 0], dtype="Int8"),
                          "label_source": tg.DECISIVE_SOURCE, "agent": "a", "action": "assistant"})
    context = [(i, j, "context", "inferred") for j in range(n) for i in range(j)]
    handoff = [(i, i + 1, "handoff", "inferred") for i in range(n - 1)]
    edges = pd.DataFrame(context + handoff, columns=["src_idx", "dst_idx", "kind", "provenance"])
    g = tg.build(steps, edges, "ww")
    assert g.number_of_edges() == 10 + 4  # both kinds between i and i+1 are kept apart
    assert tg.visible(g).number_of_edges() == 4
    assert tg.visible(g, show_inferred_context=True).number_of_edges() == 14
    assert [i for i in range(n) if g.nodes[i]["decisive"]] == [2]


# --------------------------------------------------------------------------------------------
# Drawing: offline, and trace text never becomes markup


PAYLOAD = '</script><script>alert(1)</script><img src=x onerror=alert(1)> "\' ![x](http://example.org/p.png)'


def test_page_is_self_contained_and_escapes_text():
    from components import trace_graph

    steps = STEPS.assign(agent=[PAYLOAD] * 8, action=[PAYLOAD] * 8, scope=[PAYLOAD] * 5 + ["P2"] * 3,
                         error_code=PAYLOAD)
    g = tg.mark(tg.build(steps, EDGES, PAYLOAD), SCORES, tg.DecisionRule(top_k=2))
    page = trace_graph.render_html(g, color_by="agent", selected=3, has_detector=True)
    # No external resource: no script/link/img tag pointing anywhere, no CDN.
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)\s*=", page, re.I)
    assert "cdnjs" not in page and "jsdelivr" not in page and "bootstrap" not in page
    # The payload appears only escaped: in the JSON as \u003c..., in the legend as &lt;...
    assert "<script>alert(1)" not in page
    assert "<img src=x" not in page
    assert "\\u003c/script\\u003e" in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # the legend names the agent, escaped
    # Exactly two script elements end: vis-network's and our own (nothing in the data closes one).
    assert page.lower().count("</script") == 2


def test_columns_are_as_wide_as_the_widest_step_label():
    """Short labels ("0 OC") keep the 72 px minimum; a 23-character line ("12 get_reservation_det…",
    the action cut at 20) needs 23 x 8.4 px (monospace at 14 px) + a 14 px gap = 207.2 px; a flagged
    anomaly's second line "TP · origin" (11) needs 106.4 px; the widest is capped at 14 + 24 x 8.4
    = 215.6 (a 20-character action after a 3-digit step number)."""
    from components import trace_graph

    assert trace_graph.column_px(authored()) == 72.0
    flagged = tg.mark(authored(), SCORES, tg.DecisionRule(top_k=8))
    assert trace_graph.column_px(flagged) == pytest.approx(106.4)

    def shifted(by: int, action: str):
        steps = STEPS.assign(step_idx=range(by, by + 8), action=action)
        return tg.build(steps, EDGES.assign(src_idx=EDGES["src_idx"] + by, dst_idx=EDGES["dst_idx"] + by), "r")

    assert trace_graph.column_px(shifted(10, "get_reservation_details")) == pytest.approx(207.2)
    assert trace_graph.column_px(shifted(100000, "get_reservation_details")) == pytest.approx(215.6)  # 27 characters


def test_collapsed_page_renders():
    from components import trace_graph

    c = tg.collapse(tg.mark(authored(), SCORES, tg.DecisionRule(top_k=3)), ["P1"])
    page = trace_graph.render_html(c, has_detector=True)
    assert "steps 0–4 (5)" in page and "3 anomalies" in page


# --------------------------------------------------------------------------------------------
# Real Who&When runs (counts and the judge's flags checked against the raw files)


CATCHBENCH_JUDGES = Path(__import__("catchbench").__file__).resolve().parent / "data" / "llm_judge"


def _record_key(path: Path) -> str:
    record = json.loads(path.read_text())
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256-" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def whowhen_store(app_store):
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen (the Who&When Algorithm-Generated split)")
    return app_store


@pytest.mark.parametrize("number", [1, 7, 42, 100])
def test_whowhen_run_graph_matches_the_file(whowhen_store, number):
    import queries

    record = json.loads((WHOWHEN / f"{number}.json").read_text())
    n = len(record["history"])
    run_id = f"whowhen:Algorithm-Generated/{number}"
    steps = queries.run("explorer_steps", {"run": run_id}, root=whowhen_store)
    edges = queries.run("explorer_edges", {"run": run_id}, root=whowhen_store)
    g = tg.build(steps, edges, run_id)
    assert g.number_of_nodes() == n
    assert g.number_of_edges() == n * (n - 1) // 2 + (n - 1)  # full context + hand-off chain
    assert tg.visible(g).number_of_edges() == n - 1
    decisive = [i for i in range(n) if g.nodes[i]["decisive"]]
    assert decisive == [int(record["mistake_step"])]
    assert all(g.nodes[i]["role"] is None for i in range(n))  # one failed step: no chain


def test_whowhen_judge_flags_at_top_1(whowhen_store):
    """TP/FP/FN/TN of the all-at-once GPT-5.4 judge at top 1, summed over the 126 runs, equal a
    count made from the raw files: the judge's released top (else the first of its ranking,
    else step 0 as the store's earliest-first rule for abstentions) against mistake_step."""
    import queries

    judge = json.loads((CATCHBENCH_JUDGES / "whoandwhen__all_at_once__gpt-5.4.json").read_text())["predictions"]
    legacy = {v: k for k, v in json.loads((CATCHBENCH_JUDGES / "legacy_run_keys.json").read_text())["keys"].items()}
    expected = {"TP": 0, "FP": 0, "FN": 0, "TN": 0}
    got = {"TP": 0, "FP": 0, "FN": 0, "TN": 0, "flagged_unlabeled": 0}
    files = sorted(WHOWHEN.glob("*.json"), key=lambda p: int(p.stem))
    assert len(files) == 126
    set_id = "whowhen:judge:all_at_once:gpt-5.4"
    for path in files:
        record = json.loads(path.read_text())
        n, mistake = len(record["history"]), int(record["mistake_step"])
        verdict = judge.get(legacy.get(_record_key(path), ""))
        if verdict is None:
            pick = None
        elif verdict["top"] is not None:
            pick = verdict["top"]
        else:
            pick = verdict["ranking"][0] if verdict["ranking"] else 0
        if pick == mistake:
            expected["TP"] += 1
            expected["TN"] += n - 1
        else:
            expected["FN"] += 1
            expected["FP"] += pick is not None
            expected["TN"] += n - 1 - (pick is not None)
        run_id = f"whowhen:Algorithm-Generated/{path.stem}"
        g = tg.build(queries.run("explorer_steps", {"run": run_id}, root=whowhen_store), [], run_id)
        scores = queries.run("explorer_scores", {"run": run_id, "set": set_id}, root=whowhen_store)
        tg.mark(g, scores, tg.DecisionRule(top_k=1))
        for k, v in tg.confusion(g).items():
            got[k] += v
    assert got == {**expected, "flagged_unlabeled": 0}
    assert expected["TP"] > 0 and expected["FP"] > 0
