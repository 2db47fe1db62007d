"""AppTest of the explorer page: links open exactly their view, bad values are reported.

Expected judge verdicts come from the raw CatchBench judge files and Who&When files, not from
the code under test.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from app_support import page_texts
from conftest import REPO, WHOWHEN

JUDGES = Path(__import__("catchbench").__file__).resolve().parent / "data" / "llm_judge"
WW_RUN = "whowhen:Algorithm-Generated/1"
WW_SET = "whowhen:judge:all_at_once:gpt-5.4"


@pytest.fixture()
def app(app_store, monkeypatch):
    monkeypatch.setenv("AUDITATLAS_STORE", str(app_store))
    monkeypatch.chdir(REPO)
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180)


def _open(app: AppTest, **params) -> AppTest:
    for k, v in params.items():
        app.query_params[k] = v
    app.switch_page("pages/explorer.py")
    app.run()
    assert not app.exception, app.exception
    return app


_texts = page_texts


def _link(at) -> str:
    return next(c.value for c in at.code if "explorer" in str(c.value))


def _needs_whowhen():
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen")


def _judge_top(number: int, judge_file: str) -> tuple[int | None, int]:
    """(the judge's released top, the human mistake_step) for Who&When Algorithm-Generated run ``number``."""
    record = json.loads((WHOWHEN / f"{number}.json").read_text())
    key = "sha256-" + hashlib.sha256(json.dumps(record, sort_keys=True, separators=(",", ":"),
                                                ensure_ascii=False).encode()).hexdigest()
    legacy = {v: k for k, v in json.loads((JUDGES / "legacy_run_keys.json").read_text())["keys"].items()}[key]
    verdict = json.loads((JUDGES / judge_file).read_text())["predictions"][legacy]
    return verdict["top"], int(record["mistake_step"])


def test_explorer_opens_with_run_list(app):
    _open(app)
    text = _texts(app)
    assert "Explorer" in text and "runs; page 1 of" in text
    assert len(app.dataframe) >= 1


def test_deep_link_to_a_whowhen_step_with_a_judge(app):
    _needs_whowhen()
    top, mistake = _judge_top(1, "whoandwhen__all_at_once__gpt-5.4.json")
    n = len(json.loads((WHOWHEN / "1.json").read_text())["history"])
    _open(app, run=WW_RUN, step="2", set=WW_SET, top_k="1")
    text = _texts(app)
    assert "Step detail" in text and "Judges on this run" in text
    assert app.selectbox(key="explorer_set").value == WW_SET
    assert app.selectbox(key="explorer_step").value == 2
    assert app.number_input(key="explorer_rule_value").value == 1
    tp = int(top == mistake)
    fp = 1 - tp
    assert f"TP {tp} · FP {fp} · FN {1 - tp} · TN {n - 1 - fp}" in text
    # The step's texts are shown as code (text), never Markdown.
    assert any("character" in c.value for c in app.caption)
    assert len(app.code) >= 2
    query = parse_qs(urlsplit(_link(app)).query)
    assert query["run"] == [WW_RUN] and query["step"] == ["2"] and query["set"] == [WW_SET] and query["top_k"] == ["1"]


def test_threshold_link(app):
    _needs_whowhen()
    _open(app, run=WW_RUN, set=WW_SET, threshold="6")
    assert app.selectbox(key="explorer_rule").value == "threshold"
    assert app.number_input(key="explorer_rule_value").value == 6.0
    assert "score ≥ 6" in _texts(app)
    assert parse_qs(urlsplit(_link(app)).query)["threshold"] == ["6.0"]


def test_simulated_maadbench_run(app, app_store):
    import queries

    run_id = queries.run("explorer_runs", {
        "slice": {"corpus": ["maadbench-sim"]}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [],
        "f_difficulty": ["hard"], "f_outcome": [], "min_steps": None, "max_steps": None,
        "min_anomalous": None, "max_anomalous": None, "min_chain": None, "max_chain": None, "sort": "steps",
        "descending": True, "limit": 1, "offset": 0}, root=app_store)["run"].iloc[0]
    _open(app, run=run_id, step="3")
    text = _texts(app)
    assert "Step detail" in text and "scope(s)" in text
    assert "Judges on this run" not in text  # no LLM judge scores the simulated corpus (detector sets do)


@pytest.mark.parametrize("params, sentence", [
    ({"run": "no-such:run"}, "The store holds no run with id"),
    ({"run": WW_RUN, "step": "99"}, "the link's step 99 is not one of them"),
    ({"run": WW_RUN, "step": "abc"}, "is not a step number"),
    ({"run": WW_RUN, "set": "no-such-set"}, "The store holds no prediction set"),
    ({"run": WW_RUN, "set": WW_SET, "top_k": "many"}, "is not a whole number of steps"),
    ({"run": WW_RUN, "set": WW_SET, "threshold": "high"}, "is not a number"),
])
def test_values_the_store_does_not_hold_are_reported(app, params, sentence):
    if params.get("run") == WW_RUN:
        _needs_whowhen()
    _open(app, **params)
    warnings = " ".join(w.value for w in app.warning)
    assert sentence.replace("'", "") in warnings.replace("\\", "").replace("'", ""), warnings


def test_a_set_that_does_not_score_the_run_is_reported(app, app_store):
    _needs_whowhen()
    import queries

    other = queries.run("explorer_runs", {
        "slice": {"corpus": ["maadbench-sim"]}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [],
        "f_difficulty": [], "f_outcome": [], "min_steps": None, "max_steps": None,
        "min_anomalous": None, "max_anomalous": None, "min_chain": None, "max_chain": None, "sort": "run",
        "descending": False, "limit": 1, "offset": 0}, root=app_store)["run"].iloc[0]
    _open(app, run=other, set=WW_SET)
    assert "scores no step of this run" in " ".join(w.value for w in app.warning).replace("\\", "")


def test_search_link(app):
    _open(app, q="compass", corpus="maadbench-sim")
    text = _texts(app)
    assert "steps match; page 1 of" in text
    assert app.text_input(key="search_q").value == "compass"
    hits = [d for d in app.dataframe if "snippet" in d.value.columns]
    assert hits and len(hits[0].value) == 50
    assert all("compass" in s.lower() for s in hits[0].value["snippet"])
    assert all(link.startswith("/explorer?") and "run=" in link for link in hits[0].value["link"])


def test_search_with_action_filter(app):
    _open(app, q="compass", action="APPLY_DELTA", corpus="maadbench-sim")
    hits = [d for d in app.dataframe if "snippet" in d.value.columns]
    assert hits and set(hits[0].value["action"]) == {"APPLY_DELTA"}


def test_run_list_sorts_on_chain_length(app):
    _open(app, corpus="maadbench-sim")
    app.selectbox(key="runs_sort").set_value("chain_length").run()
    app.toggle(key="runs_desc").set_value(True).run()
    assert not app.exception
    runs = next(d.value for d in app.dataframe if "chain_length" in d.value.columns)
    assert list(runs["chain_length"]) == sorted(runs["chain_length"], reverse=True)
    assert runs["chain_length"].iloc[0] >= 2


def test_run_list_shows_a_label_that_tells_runs_apart_and_the_full_id(app):
    """The list's first column is a short label (room, difficulty, outcome, end time), its last
    the full id; the label is read back against the id's own room file name."""
    import re

    _open(app, corpus="maadbench-sim")
    runs = next(d.value for d in app.dataframe if "chain_length" in d.value.columns)
    assert runs.columns[0] == "run" and runs.columns[-1] == "run_id"
    assert runs["run_id"].str.startswith("maadbench-sim:run_").all()
    assert runs["run"].is_unique and len(runs) == 25
    for label, run_id, difficulty in zip(runs["run"], runs["run_id"], runs["difficulty"]):
        ended, room, outcome = re.search(r"/(\d{12})\d\d_EscapeRoom_(.+)_(escaped|failed)$", run_id).groups()
        when = f"{ended[:4]}-{ended[4:6]}-{ended[6:8]} {ended[8:10]}:{ended[10:]}"
        assert label == f"{room} · {difficulty} · {outcome} · {when}"


def test_search_hits_carry_the_run_label(app):
    _open(app, q="compass", corpus="maadbench-sim")
    hits = next(d.value for d in app.dataframe if "snippet" in d.value.columns)
    assert hits["run_id"].str.startswith("maadbench-sim:run_").all()
    assert all(label.split(" · ")[0] in run_id for label, run_id in zip(hits["run"], hits["run_id"]))


@pytest.fixture(scope="module")
def long_run_store(tmp_path_factory):
    """One authored run of 320 steps in four scopes of 80 (over the 300-step collapse line)."""
    from auditatlas.store import write_source

    root = tmp_path_factory.mktemp("long-run")
    n = 320
    write_source(root, "long", {
        "corpora": [{"corpus": "authored", "title": "Authored", "kind": "simulated", "label_process": "by hand"}],
        "runs": [{"run_id": "authored:long", "corpus": "authored", "outcome": "failure", "n_steps": n},
                 {"run_id": "authored:empty", "corpus": "authored", "outcome": "unknown", "n_steps": 0}],
        "steps": [{"run_id": "authored:long", "corpus": "authored", "step_idx": i, "scope": f"P{i // 80 + 1}",
                   "agent": "a", "action": "X", "label": int(i in (5, 9, 170)), "text_out": f"step {i}"}
                  for i in range(n)],
        "edges": [{"run_id": "authored:long", "corpus": "authored", "src_idx": i - 1, "dst_idx": i, "kind": "data",
                   "provenance": "observed"} for i in range(1, n)],
    })
    return root


@pytest.fixture()
def long_app(long_run_store, monkeypatch):
    monkeypatch.setenv("AUDITATLAS_STORE", str(long_run_store))
    monkeypatch.chdir(REPO)
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180)


def test_long_run_opens_collapsed(long_app):
    _open(long_app, run="authored:long")
    text = _texts(long_app)
    assert "4 of 4 scopes are collapsed" in text
    assert "chain length 2" in text  # steps 5 and 9 in P1; 170 alone in P3
    assert long_app.multiselect(key="explorer_expand").value == []


def test_long_run_opens_the_scope_of_the_linked_step(long_app):
    _open(long_app, run="authored:long", step="170", expand="P1")
    text = _texts(long_app)
    assert "2 of 4 scopes are collapsed" in text  # P1 asked for, P3 holds the open step
    assert long_app.multiselect(key="explorer_expand").value == ["P1"]
    assert parse_qs(urlsplit(_link(long_app)).query)["expand"] == ["P1"]


def test_long_run_unknown_scope_is_reported(long_app):
    _open(long_app, run="authored:long", expand="P9")
    assert "This run has no scope" in " ".join(w.value for w in long_app.warning).replace("\\", "")


def test_a_run_without_steps_opens(long_app):
    """A crashed room has no steps: the page says so through its counts and draws no step."""
    _open(long_app, run="authored:empty")
    assert "0 steps" in _texts(long_app)


@pytest.mark.parametrize("text, phrase", [
    ("xx a.b(c yy", "a.b(c"), ("xx aXb(c", "a.b(c"), ("foo \\E bar", "\\E b"), ("ROOM_0042.", "room_0042."),
    ("50% off", "50%"), ("5 off", "5%"), ("a_b", "a_b"), ("axb", "a_b"), ("[x](y)", "]("), ("a\\Qb", "\\Q"),
    ("line\nbreak", "e\nb"), ("Straße", "STRASSE"), ("Ünïcode", "üNÏ"),
])
def test_search_phrase_is_a_literal_case_insensitive_substring(text, phrase):
    """The search's pattern matches exactly where Python finds the lower-cased phrase (the reference)."""
    import duckdb

    from components.explorer_lists import phrase_regex

    found = duckdb.connect().execute("SELECT regexp_matches(?, ?)", [text, phrase_regex(phrase)]).fetchone()[0]
    assert found == (phrase.lower() in text.lower())
