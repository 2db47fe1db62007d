"""Your own labels: a CSV or JSONL file joined to an OTLP corpus's steps."""
from __future__ import annotations

import json

import pytest

import queries
from auditatlas.cli import main
from auditatlas.errors import AtlasError, IngestFailed
from auditatlas.ingest import ingest
from auditatlas.store import MANIFEST, write_source
from otlp_fixtures import TRACE_A, TRACE_B, genai_trace, openinference_trace, sid, write_json


@pytest.fixture
def store(tmp_path):
    spans = openinference_trace()
    spans[1].attrs["annotation.label"] = 0  # the trace's own label on step 1
    ingest("otlp", write_json(tmp_path / "t.json", spans + genai_trace()), tmp_path / "store", corpus="mine")
    return tmp_path / "store"


def _steps(store) -> dict[tuple[str, str], dict]:
    con = queries.connect(store)
    try:
        rows = con.sql("SELECT run_id, step_id, step_idx, label, label_source, failure_mode, extra FROM steps").fetchall()
    finally:
        con.close()
    return {(r[0], r[1]): dict(zip(("run_id", "step_id", "step_idx", "label", "label_source", "failure_mode", "extra"), r))
            for r in rows}


def _label_processes(store) -> dict[str, str]:
    con = queries.connect(store)
    try:
        return dict(con.sql("SELECT run_id, label_process FROM runs").fetchall())
    finally:
        con.close()


def test_csv_rows_join_by_trace_and_span_or_run_and_step(store, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("trace_id,span_id,run_id,step_idx,label,decisive,failure_mode,note\n"
                    f"{TRACE_A},{sid(3)},,,1,1,FM-2.6,wrong tool\n"
                    f",,mine:{TRACE_B},0,0,,,\n"
                    f",,{TRACE_B},2,1,,,\n"  # the run id without its corpus prefix
                    f"{TRACE_A},{sid(77)},,,1,,,\n"  # no such span
                    f",,mine:nope,0,1,,,\n")  # no such run
    batch, _ = ingest("labels", path, store, corpus="mine")
    steps = _steps(store)
    tool = steps[(f"mine:{TRACE_A}", sid(3))]
    assert (tool["label"], tool["label_source"], tool["failure_mode"]) == (1, "labels_file", "FM-2.6")
    assert json.loads(tool["extra"])["label_file"] == {"file": "labels.csv", "line": 2, "decisive": True, "note": "wrong tool"}
    assert steps[(f"mine:{TRACE_B}", sid(11))]["label"] == 0
    by_idx = {(s["run_id"], s["step_idx"]): s for s in steps.values()}
    assert by_idx[(f"mine:{TRACE_B}", 2)]["label"] == 1
    # Steps the file does not name keep the trace's own label, or none.
    assert (steps[(f"mine:{TRACE_A}", sid(2))]["label"], steps[(f"mine:{TRACE_A}", sid(2))]["label_source"]) == (0, "span_annotation")
    assert steps[(f"mine:{TRACE_A}", sid(1))]["label"] is None
    (unmatched,) = [n for n in batch.notes if "match no step" in n]
    assert "2 row(s)" in unmatched and "line 5" in unmatched and sid(77) in unmatched and "line 6" in unmatched
    assert set(_label_processes(store).values()) == {"labels file (labels.csv)"}
    counts = queries.run("corpus_counts", root=store).set_index("corpus")
    assert int(counts.loc["mine", "labeled_steps"]) == 4


def test_jsonl_file_and_a_second_file_replaces_the_first(store, tmp_path):
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps({"trace_id": TRACE_A, "span_id": sid(2), "label": 1}) + "\n"
                     + json.dumps({"trace_id": TRACE_A, "span_id": sid(4), "label": True}) + "\n")
    ingest("labels", first, store, corpus="mine")
    assert _steps(store)[(f"mine:{TRACE_A}", sid(2))]["label"] == 1
    second = tmp_path / "second.jsonl"
    second.write_text(json.dumps({"trace_id": TRACE_A, "span_id": sid(5), "label": 0}) + "\n")
    ingest("labels", second, store, corpus="mine")
    steps = _steps(store)
    # Step 2 goes back to its annotation label; step 4 to unlabeled; step 5 is the new file's.
    assert (steps[(f"mine:{TRACE_A}", sid(2))]["label"], steps[(f"mine:{TRACE_A}", sid(2))]["label_source"]) == (0, "span_annotation")
    assert (steps[(f"mine:{TRACE_A}", sid(4))]["label"], steps[(f"mine:{TRACE_A}", sid(4))]["label_source"]) == (None, "unlabeled")
    assert steps[(f"mine:{TRACE_A}", sid(5))]["label_source"] == "labels_file"
    assert _label_processes(store)[f"mine:{TRACE_A}"] == "labels file (second.jsonl)"
    assert _label_processes(store)[f"mine:{TRACE_B}"] == "none (unlabeled traces)"


@pytest.mark.parametrize("body, words", [
    ("trace_id,span_id,label\nX,Y,maybe\n", ("line 2", "1 (anomaly) or 0")),
    ("trace_id,label\nX,1\n", ("no span_id or step_idx column",)),
    ("run_id,step_idx,label\nr,first,1\n", ("step_idx", "whole number")),
    (f"trace_id,span_id,label\n{TRACE_A},{'0' * 15}3,1\n{TRACE_A},{'0' * 15}3,0\n", ("line 3", "line 2")),
    ("trace_id,span_id,label\n", ("no label rows",)),
])
def test_a_bad_labels_file_changes_nothing(store, tmp_path, body, words):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    before = (store / MANIFEST).read_text()
    with pytest.raises(IngestFailed) as info:
        ingest("labels", path, store, corpus="mine")
    (problem,) = info.value.problems
    assert "bad.csv" in str(problem) and all(w in str(problem) for w in words), str(problem)
    assert (store / MANIFEST).read_text() == before


def test_labels_need_an_otlp_corpus(store, tmp_path, capsys):
    path = tmp_path / "l.csv"
    path.write_text(f"trace_id,span_id,label\n{TRACE_A},{sid(1)},1\n")
    with pytest.raises(AtlasError, match="ingest otlp PATH --corpus other"):
        ingest("labels", path, store, corpus="other")
    write_source(store, "whowhen", {"corpora": [{"corpus": "whowhen", "title": "W", "kind": "real"}]},
                 meta={"format": "whowhen"})
    assert main(["--store", str(store), "ingest", "labels", str(path), "--corpus", "whowhen"]) == 1
    assert "holds the whowhen import" in capsys.readouterr().err
    assert main(["--store", str(store), "ingest", "labels", str(path)]) == 2
    assert "needs --corpus CORPUS" in capsys.readouterr().err


def test_reingesting_the_traces_says_the_labels_are_dropped(store, tmp_path):
    path = tmp_path / "l.csv"
    path.write_text(f"trace_id,span_id,label\n{TRACE_A},{sid(1)},1\n")
    ingest("labels", path, store, corpus="mine")
    batch, _ = ingest("otlp", tmp_path / "t.json", store, corpus="mine")
    assert any("l.csv" in n and "ingest labels" in n for n in batch.notes)
    assert _steps(store)[(f"mine:{TRACE_A}", sid(1))]["label"] is None


def test_a_note_over_128_kib_is_kept_and_a_field_past_the_reader_limit_is_one_sentence(store, tmp_path, capsys):
    """The csv module's own limit (128 KiB) once ended in ``_csv.Error: field larger than field limit``."""
    from auditatlas.ingest.kit.csvfiles import MAX_FIELD

    note = "n" * 200_000
    path = tmp_path / "long.csv"
    path.write_text(f"trace_id,span_id,label,note\n{TRACE_A},{sid(3)},1,{note}\n")
    ingest("labels", path, store, corpus="mine")
    assert json.loads(_steps(store)[(f"mine:{TRACE_A}", sid(3))]["extra"])["label_file"]["note"] == note

    before = (store / MANIFEST).read_text()
    path.write_text(f"trace_id,span_id,label,note\n{TRACE_A},{sid(3)},1,x\n{TRACE_A},{sid(2)},1,{'n' * (MAX_FIELD + 1)}\n")
    assert main(["--store", str(store), "ingest", "labels", str(path), "--corpus", "mine"]) != 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line and "problem(s)" not in line]
    assert len(lines) == 1 and "Traceback" not in err, err[-1000:]
    assert "long.csv: field 'note': line 3 has a field longer than" in lines[0], lines[0]
    assert (store / MANIFEST).read_text() == before
