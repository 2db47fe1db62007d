"""Every view on a corpus of your own OTLP traces, through the query and
analysis layer and the CLI, with a few page runs where the page's own logic is the point.

The store (built once for the module) holds two corpora of the same twelve traces, six in the
OpenInference conventions and six in the GenAI ones (tests/otlp_fixtures.py), ids ``a0..a5``
and ``b0..b5`` (hex, 32 digits):

``mine``: root status ERROR for a0-a2 and b3-b5 (outcome failure), OK for the rest (success),
and a labels file labeling every step. Steps of an OpenInference run (backbone gpt-4o):
0 planner AGENT, 1 planner LLM, 2 planner TOOL:web_search, 3 planner LLM, 4 writer AGENT,
5 writer LLM (claude); of a GenAI run (backbone gpt-4.1): 0 triage AGENT:invoke_agent,
1 LLM:chat, 2 TOOL:get_weather, 3 LLM:chat, 4 reviewer LLM:chat. Anomalies (label 1), the rest
labeled 0:

- a0, a1, a2 (failed): steps 1 and 2, a chain of two in the run's scope; a0's step 2 is
  ``decisive`` in the file;
- a3 (succeeded): step 3 alone, a silent anomaly;
- b3, b4, b5 (failed): step 2.

``bare``: the same spans with every status UNSET (outcome unknown) and no labels.
Every count below was worked out by hand from this table.
"""
from __future__ import annotations

import json
import math

import pytest

import queries
from auditatlas import graph as tg
from auditatlas.analyses import anomaly_propagation as P
from auditatlas.analyses import board_localization
from auditatlas.analyses import detector_comparison as dv
from auditatlas.analyses import step_rates as rates
from auditatlas.analyses.board_registry import registry, slice_lacks
from auditatlas.detectors.features import step_features
from auditatlas.figures.trace_graph import page_for_run
from auditatlas.ingest import ingest
from cli_support import run_cli
from otlp_fixtures import genai_trace, openinference_trace, sid, write_json

OI = [f"{0xa0 + k:032x}" for k in range(6)]
GENAI = [f"{0xb0 + k:032x}" for k in range(6)]
MINE, BARE = {"corpus": ["mine"]}, {"corpus": ["bare"]}
ANOMALOUS_SPANS = {(OI[0], sid(2)), (OI[0], sid(3)), (OI[1], sid(2)), (OI[1], sid(3)), (OI[2], sid(2)),
                   (OI[2], sid(3)), (OI[3], sid(4)), (GENAI[3], sid(13)), (GENAI[4], sid(13)), (GENAI[5], sid(13))}


def run_id(corpus: str, trace: str) -> str:
    return f"{corpus}:{trace}"


def _spans(outcomes: bool) -> list:
    spans = []
    for k in range(6):
        oi, genai = openinference_trace(trace=OI[k]), genai_trace(trace=GENAI[k])
        # Root status: 2 ERROR (failure), 1 OK (success), 0 UNSET (unknown).
        oi[0].status = (2 if k < 3 else 1) if outcomes else 0
        genai[0].status = (1 if k < 3 else 2) if outcomes else 0
        spans += oi + genai
    return spans


def _labels_csv(path):
    rows = ["trace_id,span_id,label,decisive"]
    for trace in OI:
        rows += [f"{trace},{sid(n)},{int((trace, sid(n)) in ANOMALOUS_SPANS)},{int(trace == OI[0] and n == 3)}"
                 for n in range(1, 7)]
    for trace in GENAI:
        rows += [f"{trace},{sid(n)},{int((trace, sid(n)) in ANOMALOUS_SPANS)},0" for n in range(11, 16)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("otlp-views")
    store = root / "store"
    ingest("otlp", write_json(root / "mine.json", _spans(outcomes=True)), store, corpus="mine")
    ingest("otlp", write_json(root / "bare.json", _spans(outcomes=False)), store, corpus="bare")
    ingest("labels", _labels_csv(root / "labels.csv"), store, corpus="mine")
    return store


@pytest.fixture(scope="module")
def scored(store):
    """Two unsupervised registry detectors re-scored on corpus mine (the CLI, in this process)."""
    done = run_cli("--store", str(store), "score", "--detector", "hbos", "--detector", "random",
                   "--slice", "corpus=mine", "--workers", "0")
    assert done.returncode == 0, done.stderr
    return store, done


@pytest.fixture(scope="module")
def query(store):
    return queries.runner(store)


# --------------------------------------------------------------------------- Overview


def test_overview_rates_per_backbone_and_action(query):
    counts = query("action_rates", {"slice": MINE})
    success = rates.action_success(counts[counts["labeled_steps"] > 0]).set_index(["backbone", "action"])
    # 6 runs of each convention: per OpenInference run 2 AGENT, 3 LLM, 1 tool step; per GenAI run
    # 1 invoke_agent, 3 chat, 1 tool step.
    expected = {("gpt-4o", "AGENT"): (12, 0), ("gpt-4o", "LLM"): (18, 4), ("gpt-4o", "TOOL:web_search"): (6, 3),
                ("gpt-4.1", "AGENT:invoke_agent"): (6, 0), ("gpt-4.1", "LLM:chat"): (18, 0),
                ("gpt-4.1", "TOOL:get_weather"): (6, 3)}
    assert {k: (int(r.labeled_steps), int(r.anomalies)) for k, r in success.iterrows()} == expected
    assert success.loc[("gpt-4o", "LLM"), "success_pct"] == pytest.approx(100 * 14 / 18)
    assert success.loc[("gpt-4.1", "TOOL:get_weather"), "success_pct"] == pytest.approx(50.0)
    silent = rates.silent_failures(query("silent_failures", {"slice": MINE})).set_index("backbone")
    # a3 succeeded with an anomaly (step 3): the one silent failure, of gpt-4o's 7.
    assert (int(silent.loc["gpt-4o", "action_failures"]), int(silent.loc["gpt-4o", "silent_action_failures"])) == (7, 1)
    assert int(silent.loc["gpt-4.1", "silent_action_failures"]) == 0


def test_overview_on_the_unlabeled_corpus_says_what_it_lacks(query):
    summary = query("slice_summary", {"slice": BARE})
    assert (int(summary["runs"].sum()), int(summary["runs_with_outcome"].sum()), int(summary["labeled_steps"].sum())) == (12, 0, 0)
    sentence = rates.no_labeled_steps(summary)
    assert "neither step labels nor run outcomes" in sentence and sentence.count(". ") == 0
    # A corpus with outcomes but no step labels (tau-bench) keeps the run-level wording.
    with_outcomes = summary.assign(runs_with_outcome=3)
    assert "run-level labels only" in rates.no_labeled_steps(with_outcomes)


# --------------------------------------------------------------------------- Explorer


def test_explorer_run_steps_and_span_tree(query):
    run = query("explorer_run", {"run": run_id("mine", OI[0]), "labels": "released"}).iloc[0]
    assert (run["backbone"], run["outcome"], int(run["n_steps"]), int(run["labeled_steps"]),
            int(run["anomalous_steps"]), int(run["chain_length"])) == ("gpt-4o", "failure", 6, 6, 2, 2)
    steps = query("explorer_steps", {"run": run_id("mine", OI[0]), "labels": "released"})
    assert steps["agent"].tolist() == ["planner"] * 4 + ["writer"] * 2
    assert steps["action"].tolist() == ["AGENT", "LLM", "TOOL:web_search", "LLM", "AGENT", "LLM"]
    assert steps["decisive"].tolist() == [False, False, True, False, False, False]
    edges = query("explorer_edges", {"run": run_id("mine", OI[0])})
    # The span tree: the tool call under the LLM step that made it, the writer handed off to.
    assert set(zip(edges["src_idx"], edges["dst_idx"], edges["kind"])) == {
        (0, 1, "child"), (1, 2, "tool_call"), (0, 3, "child"), (0, 4, "handoff"), (4, 5, "child")}
    genai = query("explorer_edges", {"run": run_id("mine", GENAI[0])})
    # The GenAI chat spans' parent is the agent span; the reviewer's span also links to step 1.
    assert set(zip(genai["src_idx"], genai["dst_idx"], genai["kind"])) == {
        (0, 1, "child"), (1, 2, "tool_call"), (0, 3, "child"), (0, 4, "handoff"), (1, 4, "handoff")}


def test_explorer_graph_has_agent_lanes_and_the_decisive_star(query):
    rid = run_id("mine", OI[0])
    steps, edges = query("explorer_steps", {"run": rid, "labels": "released"}), query("explorer_edges", {"run": rid})
    by_scope = tg.build(steps, edges, rid)
    assert tg.lane_count(by_scope) == 1  # the run is its one scope
    g = tg.build(steps, edges, rid, lanes="agent")
    assert tg.lane_count(g) == 2 and tg.lanes_take_turns(g)
    # planner's four steps on the first row, writer's two on the next, each from the left edge.
    assert tg.layout(g, dx=1, dy=1, pack=True) == {0: (0, 0), 1: (1, 0), 2: (2, 0), 3: (3, 0), 4: (0, 1), 5: (1, 1)}
    assert [d["decisive"] for _, d in sorted(g.nodes(data=True))] == [False, False, True, False, False, False]
    assert g.edges[1, 2, "tool_call"]["provenance"] == "observed"
    page = page_for_run(steps, edges, None, None, None, rid, 2, "agent", False, (), False, lanes="agent")
    assert 'LANE_WORD = "agent"' in page and '"shape": "star"' in page
    assert "anomaly (decisive step, your labels)" in page and "★ decisive step" in page
    with pytest.raises(ValueError):
        tg.build(steps, edges, rid, lanes="backbone")


def test_explorer_step_detail_keeps_messages_and_every_attribute(query):
    step = query("explorer_step", {"run": run_id("mine", OI[0]), "step": 1, "labels": "released"}).iloc[0]
    assert step["text_in"] == "system: be brief\nuser: plan a trip"
    assert step["text_out"] == "assistant: search first"
    assert (int(step["tokens_in"]), int(step["tokens_out"]), step["duration_s"]) == (120, 30, 2.0)
    extra = json.loads(step["extra"])
    assert extra["attributes"] == {"llm.token_count.total": 150, "my.custom": "kept"}
    assert extra["label_file"] == {"file": "labels.csv", "line": 3, "decisive": False}
    assert (extra["trace_id"], extra["parent_span_id"]) == (OI[0], sid(1))


# --------------------------------------------------------------------------- re-scoring


def test_step_features_come_from_the_mapped_fields(store):
    features = step_features(queries.runner(store), "mine")
    assert len(features) == 66 and features.runs["run_id"].iloc[0] == run_id("mine", OI[0])
    col = {c: i for i, c in enumerate(features.columns)}
    row = {int(s): features.X[i] for i, s in enumerate(features.step_idx) if features.run_pos[i] == 0}
    llm, tool = row[1], row[2]
    assert llm[col["log_tokens_in"]] == pytest.approx(math.log(121))
    assert llm[col["log_tokens_out"]] == pytest.approx(math.log(31))
    assert llm[col["log_duration"]] == pytest.approx(math.log(3))
    assert (llm[col["has_tokens"]], llm[col["is_tool"]], llm[col["dep_out"]]) == (1, 0, 1)
    assert (tool[col["has_tokens"]], tool[col["is_tool"]], tool[col["dep_in"]]) == (0, 1, 1)
    assert tool[col["action=TOOL:web_search"]] == 1 and tool[col["agent=planner"]] == 1
    assert {c for c in features.columns if c.startswith("agent=")} == {
        "agent=planner", "agent=writer", "agent=triage", "agent=reviewer"}
    assert sorted(features.label[features.run_pos == 0].tolist()) == [0, 0, 0, 0, 1, 1]


def test_rescore_writes_step_sets_and_refuses_the_unlabeled_corpus(scored):
    store, done = scored
    sets = queries.run("prediction_sets", {"corpus": "mine", "granularity": "step"}, root=store)
    assert sorted(sets["method"]) == ["hbos", "random"]
    con = queries.connect(store)
    try:
        per_set = dict(con.sql("SELECT set_id, count(*) FROM predictions WHERE step_idx IS NOT NULL "
                               "GROUP BY set_id").fetchall())
    finally:
        con.close()
    assert sorted(per_set.values()) == [66, 66]  # every step of the twelve runs scored
    refused = run_cli("--store", str(store), "score", "--detector", "hbos", "--slice", "corpus=bare",
                      "--workers", "0")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "corpus 'bare'" in refused.stderr and "0 labeled" in refused.stderr


# --------------------------------------------------------------------------- Detectors grid


def test_detectors_grid_per_action_on_the_labeled_corpus(scored):
    store, _ = scored
    query = queries.runner(store)
    sets = dv.prediction_sets(query, "mine")
    grid = dv.compute_grid(query, "mine", MINE, by_backbone=True, sets=sets)
    assert set(zip(grid.actions["backbone"], grid.actions["action"])) == {
        ("gpt-4o", "AGENT"), ("gpt-4o", "LLM"), ("gpt-4o", "TOOL:web_search"),
        ("gpt-4.1", "AGENT:invoke_agent"), ("gpt-4.1", "LLM:chat"), ("gpt-4.1", "TOOL:get_weather")}
    # Each cell counts the labeled test steps of its backbone and action, counted here in SQL
    # straight from the stored predictions and labels.
    con = queries.connect(store)
    try:
        truth = {(b, a): (int(p), int(n)) for b, a, p, n in con.sql(
            "SELECT r.backbone, s.action, count(*) FILTER (WHERE s.label = 1), count(*) FILTER (WHERE s.label = 0) "
            "FROM predictions p JOIN prediction_sets ps USING (set_id) JOIN steps s USING (run_id, step_idx) "
            "JOIN runs r USING (run_id) WHERE ps.method = 'hbos' AND p.split = 'test' GROUP BY ALL").fetchall()}
    finally:
        con.close()
    hbos = grid.per_set[grid.per_set["set_id"].str.contains("hbos")]
    got = {(r.backbone, r.action): (int(r.n_pos), int(r.n_neg)) for r in hbos.itertuples()}
    assert got == {k: v for k, v in truth.items() if k in got} and set(got) <= set(truth)
    assert sum(p + n for p, n in got.values()) == sum(p + n for p, n in truth.values()) > 0
    defined = hbos[hbos["n_pos"].gt(0) & hbos["n_neg"].gt(0)]
    assert defined["auc"].between(0, 1).all() and hbos.loc[~hbos.index.isin(defined.index), "auc"].isna().all()


def test_detectors_on_the_unlabeled_corpus_say_so(query):
    sentence = dv.nothing_to_compare(query("slice_summary", {"slice": BARE}))
    assert sentence.startswith("No step of this slice carries a label") and sentence.count(". ") == 0
    assert "Re-score" in dv.nothing_to_compare(query("slice_summary", {"slice": MINE}))


# --------------------------------------------------------------------------- Propagation


def test_propagation_with_the_run_as_scope(query):
    status = P.chain_status(P.load_corpora(query, {}))
    assert status.chain_corpora == ["mine"]
    assert status.reasons == {"bare": "its steps carry no labels and its runs no outcome"}
    chains = P.chains(query, MINE)
    # a0-a2: steps 1 and 2 of the run's one scope; a3's anomaly and b3-b5's are alone in theirs.
    assert sorted(chains["run_id"]) == [run_id("mine", t) for t in OI[:3]]
    heat = P.load_heatmap(query, MINE).set_index(["backbone", "src_action", "later_action"])
    cell = heat.loc[("gpt-4o", "LLM", "TOOL:web_search")]
    assert (int(cell["failed"]), int(cell["followed"])) == (4, 3)  # a3's LLM anomaly is followed by none
    assert int(heat.loc[("gpt-4.1", "TOOL:get_weather", "LLM:chat"), "followed"]) == 0


# --------------------------------------------------------------------------- POST boards


def test_post_detection_on_runs_with_an_outcome_and_not_without(store):
    done = run_cli("--store", str(store), "board", "post-detection", "--corpus", "mine")
    assert done.returncode == 0, done.stderr
    assert "12 runs with an outcome" in done.stdout and "12 runs (6 failed)" in done.stdout
    refused = run_cli("--store", str(store), "board", "post-detection", "--corpus", "bare")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "needs runs with an outcome, both failed and succeeded ones, which that corpus lacks" in refused.stderr


def test_localization_takes_the_labeled_decisive_step(query):
    items = query("localization_items", {"target_corpus": "mine", "slice": {}}).set_index("run_id")
    # a0's decisive step 2 wins over its first anomaly (1); the others: their first anomaly.
    assert items["truth_idx"].to_dict() == {run_id("mine", OI[0]): 2, run_id("mine", OI[1]): 1,
                                            run_id("mine", OI[2]): 1, run_id("mine", GENAI[3]): 2,
                                            run_id("mine", GENAI[4]): 2, run_id("mine", GENAI[5]): 2}
    result = board_localization.compute(query, "mine", None)
    position = next(r for r in result.rows if r.entrant == "position")
    # Ranks (truth + 1): 3, 2, 2, 3, 3, 3.
    assert position.metrics == pytest.approx({"top1": 0.0, "top3": 1.0, "mrr": (4 / 3 + 2 / 2) / 6})
    assert board_localization.corpora(query) == ["mine"]


def test_boards_say_what_the_unlabeled_corpus_lacks(query):
    boards = registry()
    available = {name: b.corpora(query) for name, b in boards.items()}
    assert available["post-detection"] == available["live"] == available["post-localization"] == ["mine"]
    sentence = slice_lacks(boards["post-localization"], BARE, available["post-localization"])
    assert sentence == ("The post-localization board needs a failed run with a labeled anomalous step, which the "
                        "slice's corpus 'bare' lacks; it can score mine.")
    assert slice_lacks(boards["post-detection"], MINE, available["post-detection"]) is None
    assert slice_lacks(boards["pre"], BARE, []) is None  # PRE scores configurations, not the slice


# --------------------------------------------------------------------------- pages


def _texts(at) -> str:
    from app_support import page_texts

    return page_texts(at).replace("\\", "")


def test_runs_are_named_by_their_root_span_and_start_time(query):
    """A trace id tells nothing: lists and the Explorer's heading name a run by its first root
    span and when it started (every fixture trace starts at T0, 2023-11-14 22:13:20 UTC)."""
    from auditatlas.views import explorer_view

    blocks = explorer_view.run_list(query, MINE)
    runs = next(b.frame for b in blocks if hasattr(b, "frame"))
    labels = dict(zip(runs["run_id"], runs["run"]))
    assert labels[run_id("mine", OI[0])] == "planner · 2023-11-14 22:13:20"
    assert labels[run_id("mine", GENAI[5])] == "invoke_agent triage · 2023-11-14 22:13:20"
    run = query("explorer_run", {"run": run_id("mine", OI[1]), "labels": "released"}).iloc[0].to_dict()
    head = explorer_view.run_head(run, MINE)[0]
    assert head.text.sentence == "Run planner · 2023-11-14 22:13:20"


def test_explorer_page_on_a_received_style_run(store, monkeypatch):
    """The Explorer on an OTLP run: agent lanes from the link, the step's messages and attributes."""
    from app_support import open_page

    at = open_page(store, monkeypatch, "pages/explorer.py", run=run_id("mine", OI[0]), step="1", lanes="agent")
    assert at.selectbox(key="explorer_lanes").value == "agent"
    text = _texts(at)
    assert "**Step 1** · LLM · agent planner" in text
    headings = [h.value.replace("\\", "").replace("\u2060", "") for h in at.subheader]  # as md() escaped them
    assert "Run planner · 2023-11-14 22:13:20" in headings
    assert "backbone gpt-4o" in text and "outcome **failure**" in text
    codes = [c.value for c in at.code]
    assert "system: be brief\nuser: plan a trip" in codes
    assert any('"my.custom": "kept"' in c for c in codes)
    assert not at.warning


def test_boards_page_on_the_unlabeled_corpus(store, monkeypatch):
    from app_support import open_page

    at = open_page(store, monkeypatch, "pages/boards.py", corpus="bare", tab="POST")
    infos = [i.value.replace("\\", "") for i in at.info]
    assert ("The post-detection board needs runs with an outcome, both failed and succeeded ones, which the "
            "slice's corpus 'bare' lacks; it can score mine.") in infos
    assert any(i.startswith("The post-localization board needs") for i in infos)
    assert not at.dataframe  # no board of another corpus is drawn under the slice


def test_overview_detectors_and_propagation_pages_on_the_unlabeled_corpus(store, monkeypatch):
    from app_support import open_page

    at = open_page(store, monkeypatch, "pages/overview.py", corpus="bare")
    assert any("neither step labels nor run outcomes" in i.value for i in at.info)
    at.switch_page("pages/detectors.py").run()
    assert any(i.value.startswith("No step of this slice carries a label") for i in at.info)
    at.switch_page("pages/propagation.py").run()
    assert "bare has no chains here: its steps carry no labels and its runs no outcome." in _texts(at)


def test_detectors_page_draws_the_grid_per_action(scored, monkeypatch):
    from app_support import open_page

    store, _ = scored
    at = open_page(store, monkeypatch, "pages/detectors.py", corpus="mine")
    assert "2 detector(s)" in _texts(at)
    grid = next(f.value.data if hasattr(f.value, "data") else f.value for f in at.dataframe)
    backbone = at.selectbox(key="grid_backbone").value
    # One row per action of the backbone shown, then the mean over actions.
    actions = {"gpt-4o": {"AGENT", "LLM", "TOOL:web_search"},
               "gpt-4.1": {"AGENT:invoke_agent", "LLM:chat", "TOOL:get_weather"}}[backbone]
    assert {dv.action_label(a) for a in actions} == set(grid["action"].iloc[:-1])
    assert grid["action"].iloc[-1] == "mean over actions"
    assert {c for c in grid.columns if "(1 set)" in c} == {"hbos · structural (1 set)", "random · structural (1 set)"}
