"""Every input one sentence: inputs that once ended in a traceback or were taken without a word.

Each case goes through the real command (in this process, ``cli_support.run_cli``): exit
non-zero, exactly one problem line naming the file and field, no traceback, the store unchanged.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import queries
import review_store
from auditatlas import verdicts
from auditatlas.ingest import ingest
from auditatlas.ingest.kit import compact, json_text, readable
from auditatlas.store import MANIFEST
from auditatlas.views.app_link import parse_link
from cli_support import run_cli
from otlp_fixtures import openinference_trace, write_json

ATIF = {"schema_version": "ATIF-v1.7", "session_id": "s1", "agent": {"name": "helper", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"},
                  {"step_id": 2, "source": "agent", "message": "hello"}]}


def _problem_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:") and "problem(s)" not in line]


def _refused(store: Path, argv: list[str], *words: str) -> str:
    before = (store / MANIFEST).read_bytes() if (store / MANIFEST).exists() else None
    done = run_cli("--store", str(store), *argv)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = _problem_lines(done.stderr)
    for word in words:
        assert word in line, line
    assert ((store / MANIFEST).read_bytes() if (store / MANIFEST).exists() else None) == before
    return line


# --------------------------------------------------------------------------- ATIF v1.7

def _atif(**change) -> dict:
    doc = json.loads(json.dumps(ATIF))
    for key, value in change.items():
        if key.startswith("step0_"):
            doc["steps"][0][key.removeprefix("step0_")] = value
        elif value is None:
            del doc[key]
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize("verb, doc, field, says", [
    ("traces", _atif(steps="oops"), "steps", "list of step objects"),  # once AttributeError inside agentpile
    ("atif", _atif(step0_step_id="x"), "steps[0].step_id", "whole numbers from 1"),
    ("atif", _atif(step0_step_id=0), "steps[0].step_id", "whole numbers from 1"),
    ("atif", _atif(step0_source="robot"), "steps[0].source", "system, user, agent"),  # once a new action ROBOT
    ("atif", _atif(agent=None), "agent", "requires an agent object"),
    ("atif", _atif(agent={"version": "1"}), "agent", "requires an agent object"),
])
def test_an_atif_file_breaking_v1_7_is_one_sentence_naming_the_field(tmp_path, verb, doc, field, says):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    line = _refused(tmp_path / "store", ["ingest", verb, str(path), "--corpus", "mine"], says)
    assert line.startswith(f"error: t.json: field '{field}'"), line


def test_a_v1_7_atif_file_still_reads(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(ATIF))
    done = run_cli("--store", str(tmp_path / "store"), "ingest", "atif", str(path), "--corpus", "mine")
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- tours import

def test_tours_import_of_deeply_nested_json_is_one_sentence(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)  # once RecursionError
    done = run_cli("--store", str(tmp_path / "store"), "tours", "import", str(path))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = _problem_lines(done.stderr)
    assert "deep.json" in line and "levels deep" in line, line


# --------------------------------------------------------------------------- stored JSON is JSON

@pytest.mark.parametrize("encode", [compact, readable, json_text])
def test_non_finite_numbers_are_stored_as_valid_json(encode):
    text = encode({"a": math.nan, "b": [math.inf, -math.inf], "c": 1.5})
    # Strict JSON refuses the bare literals; the values are kept as protobuf's JSON mapping writes them.
    assert json.loads(text, parse_constant=lambda name: pytest.fail(f"bare {name} in {text}")) == {
        "a": "NaN", "b": ["Infinity", "-Infinity"], "c": 1.5}


def test_a_whowhen_nan_is_stored_as_json_duckdb_reads(tmp_path):
    """A release's ``ground_truth`` of NaN (Python's json reads the literal) was stored as a bare NaN."""
    from test_ingest_whowhen import HAND_CRAFTED

    folder = tmp_path / "release" / "Hand-Crafted"
    folder.mkdir(parents=True)
    text = (HAND_CRAFTED / "7.json").read_text(encoding="utf-8")
    record = json.loads(text)
    record["ground_truth"] = math.nan
    (folder / "7.json").write_text(json.dumps(record), encoding="utf-8")
    ingest("whowhen", tmp_path / "release", tmp_path / "store")
    con = queries.connect(tmp_path / "store")
    try:
        extra = con.sql("SELECT extra FROM runs").fetchall()[0][0]
        assert con.sql("SELECT count(*) FROM runs WHERE NOT json_valid(extra)").fetchall()[0][0] == 0
    finally:
        con.close()
    assert json.loads(extra)["ground_truth"] == "NaN"


# --------------------------------------------------------------------------- implausible times

def test_a_span_starting_far_in_the_future_is_one_sentence(tmp_path):
    spans = openinference_trace()
    spans[1].start = 253_402_300_000 - 1_700_000_000  # seconds after the fixtures' T0: the year 9999
    path = write_json(tmp_path / "t.json", spans)
    line = _refused(tmp_path / "store", ["ingest", "otlp", str(path), "--corpus", "mine"], "t.json", "9999",
                    "more than a day from now")
    assert "Traceback" not in line


@pytest.fixture(scope="module")
def review_root(tmp_path_factory) -> Path:
    return review_store.build(tmp_path_factory.mktemp("review") / "store")


def _verdict_csv(path: Path, **row) -> Path:
    row = {"run_id": "r:a", "step_idx": "1", "verdict": "anomaly", "reviewer": "ann", **row}
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    return path


@pytest.mark.parametrize("at", ["9999-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "0001-01-01T00:00:00"])
def test_an_implausible_reviewed_at_is_one_sentence(review_root, tmp_path, at):
    path = _verdict_csv(tmp_path / "v.csv", reviewed_at=at)
    _refused(review_root, ["ingest", "reviews", str(path)], "line 2", "reviewed_at", "plausible time")
    with pytest.raises(verdicts.BadVerdict, match="plausible time"):
        verdicts.append_verdicts(review_root, [verdicts.verdict("r", "r:a", 1, "anomaly", "ann", reviewed_at=at)])


# --------------------------------------------------------------------------- verdict ids, reviewer names

def test_a_verdict_id_given_again_with_other_content_is_a_conflict(review_root, tmp_path):
    import shutil

    root = Path(shutil.copytree(review_root, tmp_path / "store"))
    first = verdicts.verdict("r", "r:a", 1, "anomaly", "ann", reviewed_at="2026-01-01T10:00:00Z")
    verdicts.append_verdicts(root, [first])
    assert verdicts.append_verdicts(root, [first])["added"] == 0  # the same verdict again: held already
    before = (root / MANIFEST).read_bytes()
    with pytest.raises(verdicts.BadVerdict, match=f"held already with other content: {first['verdict_id']}"):
        verdicts.append_verdicts(root, [{**first, "verdict": "normal"}])
    assert (root / MANIFEST).read_bytes() == before
    path = _verdict_csv(tmp_path / "v.csv", verdict="normal", reviewed_at="2026-01-01T10:00:00Z",
                        verdict_id=first["verdict_id"])
    _refused(root, ["ingest", "reviews", str(path)], "held already with other content")


@pytest.mark.parametrize("name", ["x" * 10_000, "ann\x00bob"])
def test_a_reviewer_name_that_is_no_name_is_one_sentence(review_root, name):
    with pytest.raises(verdicts.BadVerdict, match="is not a name") as info:
        verdicts.append_verdicts(review_root, [verdicts.verdict("r", "r:a", 1, "anomaly", name)])
    assert len(str(info.value)) < 300 and "\x00" not in str(info.value)
    problems = parse_link("/review?reviewer=" + name.replace("\x00", "%00")).problems
    assert len(problems) == 1 and "reviewer" in problems[0] and len(problems[0]) < 300, problems


# --------------------------------------------------------------------------- the link scheme

@pytest.mark.parametrize("link, says", [
    ("/boards?tab=POST&tab=LIVE", ["The link gives tab 2 values (POST, LIVE); tab holds one, using LIVE."]),
    ("/?difficulty=&backbone=", ["The link gives backbone an empty value; left out.",
                                 "The link gives difficulty an empty value; left out."]),
    ("/boards?tab=", ["The link gives tab an empty value; using PRE."]),
    ("/?labels=released&labels=reviewed", ["The link gives labels 2 values (released, reviewed); labels holds one, "
                                          "using reviewed."]),
])
def test_repeated_and_empty_link_values_are_reported(link, says):
    assert sorted(parse_link(link).problems) == sorted(says)


def test_export_refusing_a_link_does_not_say_what_the_page_would_use(review_root, tmp_path):
    done = run_cli("--store", str(review_root), "export", "/boards?tab=NOPE", "--out", str(tmp_path / "x.html"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = _problem_lines(done.stderr)
    assert "The link's tab 'NOPE' is not one of PRE, LIVE, POST. Nothing was written." in line, line
    assert "using" not in line and not (tmp_path / "x.html").exists()


def test_the_receiver_rejects_a_span_from_the_far_future_in_partial_success(tmp_path):
    from otlp_fixtures import json_doc
    from receive_support import post, running

    spans = openinference_trace()
    spans[1].start = 253_402_300_000 - 1_700_000_000  # the year 9999
    with running(tmp_path / "store", "live") as live:
        answer = post(live.url, json.dumps(json_doc(spans)).encode())
    partial = answer.json()["partialSuccess"]
    assert answer.status == 200 and int(partial["rejectedSpans"]) == 1, answer.body
    assert "9999" in partial["errorMessage"] and "more than a day from now" in partial["errorMessage"]
