"""The Re-score page's judges: a judge run from the app against the scripted Chat Completions
server (tests/judge_server.py), the table of judge sets read back against each set's provenance
in the store, the key never on the page, a cancelled run that wrote nothing, and the export's
copy of the table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from app_support import open_page, page_texts
from auditatlas.ingest import ingest
from auditatlas.store import read_manifest
from conftest import WHOWHEN
from queries import runner
from test_judges import Server, _truths

pytestmark = [pytest.mark.xdist_group("judges_app")]
PAGE = "pages/rescore.py"
KEY_ENV = "ATLAS_APP_JUDGE_KEY"
KEY = "sk-app-test-0123456789-never-shown"
SLICE = {"corpus": "whowhen", "difficulty": "3"}  # 4 runs


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen")
    truths = tmp_path_factory.mktemp("app-judge-truths") / "truths.json"
    truths.write_text(json.dumps(_truths()))
    s = Server(truths)
    yield s
    s.kill()


@pytest.fixture(scope="module")
def store(tmp_path_factory, server) -> Path:
    root = tmp_path_factory.mktemp("judges-app") / "store"
    ingest("whowhen", WHOWHEN, root)
    return root


def _everything(at) -> str:
    """Every element of the page as its protobuf text: widgets' values, tables, messages."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)
    walk(at._tree)
    return "\n".join(out)


def _judge_table(at):
    return next(d.value for d in at.dataframe if "tokens_per_run" in d.value.columns)


def _judge_sources(store: Path) -> set[str]:
    return {name for name in read_manifest(store)["sources"] if name.startswith("judge-")}


def test_a_judge_run_from_the_page_writes_a_set_whose_table_row_is_its_provenance(store, server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    at = open_page(store, monkeypatch, PAGE, **SLICE, judge_model="oracle", judge_base_url=server.url,
                   judge_api_key_env=KEY_ENV, judge_max_connections="2")
    assert at.selectbox(key="judge_protocol").value == "all-at-once"
    assert at.text_input(key="judge_model").value == "oracle"
    assert "No LLM judge set on the slice's corpora yet." in page_texts(at)
    before = _judge_sources(store)
    at.number_input(key="judge_price_in").set_value(2.0).run()
    at.number_input(key="judge_price_out").set_value(8.0).run()
    at.button(key="judge_run").click().run()
    assert not at.exception, at.exception
    new = _judge_sources(store) - before
    assert len(new) == 1
    source = new.pop()
    text = page_texts(at) + "\n".join(s.value for s in at.success)
    assert f"Wrote 1 judge set(s) into store source {source}" in text.replace("\\", "")
    assert "4 of 4 runs judged, 0 abstained, 0 not judged; 4 new calls" in text.replace("\\", "")
    assert server.calls("oracle") == 4

    stored = runner(store)("judge_sets", {"corpora": ["whowhen"]}).set_index("set_id")
    set_id = f"{source}-whowhen"
    params = json.loads(stored.loc[set_id, "params"])
    row = _judge_table(at).set_index("set_id").loc[set_id]
    assert (row["protocol"], row["model"], row["origin"]) == ("all_at_once", "oracle", "rescore")
    for column, expected in [("runs", params["runs"]), ("calls", params["calls"]),
                             ("tokens_in", params["tokens_in"]), ("tokens_out", params["tokens_out"]),
                             ("tokens_per_run", params["tokens_per_run"]), ("cost", params["cost"]),
                             ("abstention_rate", params["abstention_rate"]),
                             ("latency_p50_s", params["latency"]["p50_s"]),
                             ("latency_p95_s", params["latency"]["p95_s"])]:
        assert row[column] == pytest.approx(expected), column
    # What the scripted server bills (100 in, 10 out per call) at the prices given.
    assert (row["runs"], row["calls"], row["tokens_in"], row["tokens_out"]) == (4, 4, 400, 40)
    assert row["tokens_per_run"] == 110 and row["abstention_rate"] == 0
    assert row["cost"] == pytest.approx((400 * 2.0 + 40 * 8.0) / 1e6)

    # The key reached the endpoint, and nothing the page shows.
    assert f"Bearer {KEY}" in server.stats()["authorization"]
    assert KEY not in _everything(at)
    assert KEY_ENV in page_texts(at).replace("\\", "")
    for path in store.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path

    # The same judge again: every reply from the cache, no new call, still one set.
    at.button(key="judge_run").click().run()
    assert not at.exception, at.exception
    assert server.calls("oracle") == 4
    assert _judge_sources(store) - before == {source}
    assert "0 new calls, 4 from the cache" in page_texts(at).replace("\\", "")


def test_the_export_holds_the_judge_table(store, server):
    from auditatlas.export import export_view

    sets = runner(store)("judge_sets", {"corpora": ["whowhen"]})
    if sets.query("origin == 'rescore'").empty:
        pytest.skip("needs the judge set the test above writes")
    made = export_view(runner(store), store, "/rescore?corpus=whowhen&difficulty=3&judge_model=oracle")
    for rec in sets.query("origin == 'rescore'").to_dict(orient="records"):
        params = json.loads(rec["params"])
        assert f"<td>{rec['set_id']}</td>" in made.html
        assert f"<td>{params['tokens_in']}</td>" in made.html
    assert "judge protocol all-at-once on model oracle" in made.html


def test_a_cancelled_judge_says_nothing_was_written(store, server, monkeypatch):
    at = open_page(store, monkeypatch, PAGE, **SLICE)
    before = read_manifest(store)["sources"]
    # What a click on Cancel leaves behind: the run started, then the page reran.
    at.session_state["judge_running"] = True
    at.run()
    assert "Judge cancelled; nothing was written" in page_texts(at)
    assert read_manifest(store)["sources"] == before


def test_without_model_and_url_the_run_button_waits(store, server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    at = open_page(store, monkeypatch, PAGE, **SLICE, judge_api_key_env=KEY_ENV)
    assert at.button(key="judge_run").disabled
    assert f"The environment variable {KEY_ENV} is not set" in page_texts(at).replace("\\", "")
