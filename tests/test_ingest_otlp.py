"""The OTLP adapter: both conventions, every encoding to the same rows, grouping, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditatlas.cli import main
from auditatlas.errors import AtlasError, IngestFailed
from auditatlas.ingest import Context, ingest, otlp, usage_problem
from auditatlas.store import MANIFEST, write_source
from otlp_fixtures import (
    T0,
    TRACE_A,
    TRACE_B,
    S,
    genai_trace,
    json_doc,
    openinference_trace,
    sid,
    write_gzip_json,
    write_json,
    write_jsonl,
    write_pb,
)


def _read(path: Path, tmp_path: Path, **options):
    return otlp.read(path, Context(store=tmp_path / "store"), corpus=options.pop("corpus", "mine"), **options)


def _steps(batch) -> dict[str, dict]:
    return {row["step_id"]: row for row in batch.tables["steps"]}


def _extra(row: dict) -> dict:
    return json.loads(row["extra"])


def _comparable(batch) -> dict:
    """A batch's rows without what names the file (the encodings differ only in that)."""
    def strip(row: dict) -> dict:
        row = dict(row)
        if "extra" in row:
            extra = json.loads(row["extra"])
            extra.pop("file", None)
            row["extra"] = extra
        row.pop("source_file", None)
        row.pop("description", None)
        return row

    return {name: [strip(r) for r in rows] for name, rows in batch.tables.items()}


# --------------------------------------------------------------------------- the mapping


def test_openinference_trace_becomes_one_run(tmp_path):
    batch = _read(write_json(tmp_path / "t.json", openinference_trace()), tmp_path)
    (run,) = batch.tables["runs"]
    assert run["run_id"] == f"mine:{TRACE_A}" and run["corpus"] == "mine" and batch.source == "mine"
    assert run["backbone"] == "gpt-4o"  # two gpt-4o calls, one claude
    assert run["outcome"] == "failure"  # the root span's ERROR status
    assert run["n_steps"] == 6
    steps = batch.tables["steps"]
    assert [s["step_idx"] for s in steps] == list(range(6))
    assert [s["step_id"] for s in steps] == [sid(n) for n in (1, 2, 3, 4, 5, 6)]  # start-time order
    by = _steps(batch)
    assert by[sid(1)]["agent"] == "planner" and by[sid(1)]["action"] == "AGENT"
    assert by[sid(1)]["error_code"] == "ERROR" and _extra(by[sid(1)])["status_message"] == "gave up"
    llm = by[sid(2)]
    assert llm["agent"] == "planner"  # the nearest agent ancestor
    assert llm["action"] == "LLM" and not llm["is_tool"]
    assert llm["text_in"] == "system: be brief\nuser: plan a trip"
    assert llm["text_out"] == "assistant: search first"
    assert (llm["tokens_in"], llm["tokens_out"]) == (120, 30)
    assert llm["duration_s"] == pytest.approx(2.0)
    extra = _extra(llm)
    assert extra["models"] == ["gpt-4o"]
    # Unmapped attributes are kept; mapped ones are not repeated.
    assert extra["attributes"] == {"llm.token_count.total": 150, "my.custom": "kept"}
    tool = by[sid(3)]
    assert tool["action"] == "TOOL:web_search" and tool["is_tool"]
    assert tool["text_in"] == '{"q": "flights"}' and tool["text_out"] == "3 results"
    assert by[sid(6)]["agent"] == "writer" and _extra(by[sid(6)])["models"] == ["claude-3-5-sonnet"]
    assert all(s["label"] is None and s["label_source"] == "unlabeled" for s in steps)
    edges = {(e["src_idx"], e["dst_idx"]): e["kind"] for e in batch.tables["edges"]}
    assert edges == {(0, 1): "child", (1, 2): "tool_call", (0, 3): "child", (0, 4): "handoff", (4, 5): "child"}
    assert {e["provenance"] for e in batch.tables["edges"]} == {"observed"}
    assert json.loads(run["extra"])["services"] == ["my-agents"]


def test_genai_trace_reads_current_and_deprecated_names(tmp_path):
    batch = _read(write_json(tmp_path / "t.json", genai_trace()), tmp_path)
    (run,) = batch.tables["runs"]
    assert run["backbone"] == "gpt-4.1" and run["outcome"] == "success"  # root status OK
    by = _steps(batch)
    assert by[sid(11)]["action"] == "AGENT:invoke_agent" and by[sid(11)]["agent"] == "triage"
    chat = by[sid(12)]
    assert chat["action"] == "LLM:chat" and chat["agent"] == "triage"
    assert (chat["tokens_in"], chat["tokens_out"]) == (42, 7)
    assert "weather in Paris?" in chat["text_in"]
    assert _extra(chat)["models"] == ["gpt-4.1", "gpt-4.1-2025"]
    tool = by[sid(13)]
    assert tool["action"] == "TOOL:get_weather" and tool["is_tool"]
    assert (tool["text_in"], tool["text_out"]) == ('{"city": "Paris"}', "sunny")
    assert tool["error_code"] == "TimeoutError"  # from the exception event
    assert (by[sid(14)]["tokens_in"], by[sid(14)]["tokens_out"]) == (50, 9)  # deprecated names
    assert by[sid(15)]["agent"] == "reviewer"
    edges = {(e["src_idx"], e["dst_idx"]): e["kind"] for e in batch.tables["edges"]}
    idx = {s["step_id"]: s["step_idx"] for s in batch.tables["steps"]}
    assert edges[(idx[sid(12)], idx[sid(13)])] == "tool_call"
    assert edges[(idx[sid(11)], idx[sid(15)])] == "handoff"  # triage -> reviewer
    # The span link from reviewer's chat to the first chat is an edge too (agents differ: handoff).
    assert (idx[sid(12)], idx[sid(15)]) in edges


def test_every_anyvalue_form_is_kept(tmp_path):
    values = {"s": "text", "b": True, "i": -(2 ** 62), "d": 2.5, "arr": [1, "x", False], "kv": {"k": 1, "n": [2.0]},
              "raw": b"\x00\xff"}
    spans = [S(TRACE_A, sid(1), "x", 0, 1, attrs=values)]
    for path in (write_json(tmp_path / "a.json", spans), write_pb(tmp_path / "a.pb", spans)):
        kept = _extra(_read(path, tmp_path).tables["steps"][0])["attributes"]
        assert kept == {**{k: v for k, v in values.items() if k != "raw"}, "raw": {"$bytes": "AP8="}}


def test_json_jsonl_protobuf_and_gzip_import_to_the_same_rows(tmp_path):
    spans = openinference_trace() + genai_trace()
    files = {
        "json": write_json(tmp_path / "t.json", spans),
        "jsonl": write_jsonl(tmp_path / "t.jsonl", [openinference_trace(), genai_trace()]),
        "pb": write_pb(tmp_path / "t.pb", spans),
        "pb.gz": write_pb(tmp_path / "t.pb.gz", spans, gz=True),
        "json.gz": write_gzip_json(tmp_path / "t.json.gz", spans),
    }
    batches = {k: _comparable(_read(p, tmp_path)) for k, p in files.items()}
    reference = batches.pop("json")
    assert len(reference["runs"]) == 2 and len(reference["steps"]) == 11
    for name, batch in batches.items():
        assert batch == reference, name


def test_base64_ids_and_named_enums(tmp_path):
    """The form protobuf's own JSON printer writes: base64 ids, enum names, int64 as strings."""
    import base64

    doc = json_doc(openinference_trace())
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        span["kind"] = {1: "SPAN_KIND_INTERNAL", 3: "SPAN_KIND_CLIENT"}[span["kind"]]
        span["status"]["code"] = {0: "STATUS_CODE_UNSET", 2: "STATUS_CODE_ERROR"}[span["status"]["code"]]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    hexed = _comparable(_read(write_json(tmp_path / "h.json", openinference_trace()), tmp_path))
    assert _comparable(_read(tmp_path / "b.json", tmp_path)) == hexed


def test_a_folder_reads_every_otlp_file(tmp_path):
    folder = tmp_path / "exports"
    (folder / "day2").mkdir(parents=True)
    write_json(folder / "a.json", openinference_trace())
    write_pb(folder / "day2" / "b.pb", genai_trace())
    (folder / "README.txt").write_text("not a trace")
    batch = _read(folder, tmp_path)
    assert {r["source_file"] for r in batch.tables["runs"]} == {"a.json", "day2/b.pb"}
    assert otlp.can_read(folder) and not otlp.can_read(tmp_path / "exports" / "README.txt")


def test_real_sdk_spans_encoded_by_the_otlp_exporter(tmp_path):
    """Spans made by opentelemetry-sdk, encoded by the OTLP exporter's own encoder, as .pb and as
    protobuf-printed JSON (base64 ids, enum names): the same rows, with the GenAI mapping."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("my.instrumentation", "0.1")
    with tracer.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support", "session.id": "s-1"}):
        with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 4}):
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}) as tool:
                tool.set_status(Status(StatusCode.ERROR, "not found"))
                tool.set_attribute("error.type", "KeyError")
    provider.shutdown()
    request = encode_spans(exporter.get_finished_spans())
    (tmp_path / "sdk.pb").write_bytes(request.SerializeToString())
    (tmp_path / "sdk.json").write_text(json.dumps(MessageToDict(request)))
    from_pb, from_json = _read(tmp_path / "sdk.pb", tmp_path), _read(tmp_path / "sdk.json", tmp_path)
    assert _comparable(from_pb) == _comparable(from_json)
    steps = from_pb.tables["steps"]
    assert [s["action"] for s in steps] == ["AGENT:invoke_agent", "LLM:chat", "TOOL:lookup"]
    assert [s["agent"] for s in steps] == ["support"] * 3
    assert (steps[1]["tokens_in"], steps[1]["tokens_out"]) == (11, 4)
    assert steps[2]["error_code"] == "KeyError" and steps[2]["is_tool"]
    assert from_pb.tables["runs"][0]["backbone"] == "gpt-4o-mini"
    assert [(e["src_idx"], e["dst_idx"], e["kind"]) for e in from_pb.tables["edges"]] == [(0, 1, "child"), (1, 2, "tool_call")]


def test_group_by_session_makes_one_run_per_conversation(tmp_path):
    spans = (openinference_trace(TRACE_A, session="conv-1") + openinference_trace(TRACE_B, session="conv-1")
             + genai_trace("1" * 32, conversation="conv-2") + genai_trace("2" * 32))
    path = write_json(tmp_path / "t.json", spans)
    assert len(_read(path, tmp_path).tables["runs"]) == 4
    batch = _read(path, tmp_path, group="session")
    runs = {r["run_id"]: r for r in batch.tables["runs"]}
    assert set(runs) == {"mine:session/conv-1", "mine:session/conv-2", f"mine:{'2' * 32}"}
    assert runs["mine:session/conv-1"]["n_steps"] == 12
    assert json.loads(runs["mine:session/conv-1"]["extra"])["trace_ids"] == [TRACE_A, TRACE_B]
    # Both traces reuse span ids 1..6: each step's parent edge stays inside its own trace.
    conv = [s for s in batch.tables["steps"] if s["run_id"] == "mine:session/conv-1"]
    edges = [e for e in batch.tables["edges"] if e["run_id"] == "mine:session/conv-1"]
    assert len(edges) == 10
    for e in edges:
        assert _extra(conv[e["src_idx"]])["trace_id"] == _extra(conv[e["dst_idx"]])["trace_id"]


def test_parent_before_children_on_ties_and_clock_skew(tmp_path):
    spans = [
        S(TRACE_A, sid(3), "child-same-start", 0, 1, parent=sid(1)),
        S(TRACE_A, sid(1), "root", 0, 5),
        S(TRACE_A, sid(2), "skewed-child", -2, 1, parent=sid(1)),  # starts before its parent
        S(TRACE_A, sid(4), "later", 0.5, 1, parent=sid(1)),
    ]
    batch = _read(write_json(tmp_path / "t.json", spans), tmp_path)
    assert [s["step_id"] for s in batch.tables["steps"]] == [sid(1), sid(2), sid(3), sid(4)]
    assert all(e["src_idx"] < e["dst_idx"] for e in batch.tables["edges"])
    assert any("t.json" in n and sid(2) in n and "clock skew" in n for n in batch.notes)


def test_annotation_attributes_are_labels(tmp_path):
    spans = openinference_trace()
    spans[2].attrs.update({"annotation.correctness.label": "incorrect", "annotation.correctness.explanation": "wrong tool"})
    spans[3].attrs.update({"annotation.label": 0})
    batch = _read(write_json(tmp_path / "t.json", spans), tmp_path)
    by = _steps(batch)
    assert (by[sid(3)]["label"], by[sid(3)]["label_source"]) == (1, "span_annotation")
    assert _extra(by[sid(3)])["annotation"]["note"] == "wrong tool"
    assert (by[sid(4)]["label"], by[sid(4)]["label_source"]) == (0, "span_annotation")
    assert by[sid(1)]["label"] is None
    assert batch.tables["runs"][0]["label_process"].startswith("span annotations")


# --------------------------------------------------------------------------- notes, not refusals


def test_a_parent_that_never_arrives_makes_a_root(tmp_path):
    spans = [S(TRACE_A, sid(1), "root", 0, 5), S(TRACE_A, sid(2), "orphan", 1, 2, parent=sid(99))]
    batch = _read(write_json(tmp_path / "t.json", spans), tmp_path)
    assert batch.tables["edges"] == []
    orphan = _steps(batch)[sid(2)]
    assert _extra(orphan)["missing_parent"] == sid(99) and "parent_span_id" not in _extra(orphan)
    (note,) = [n for n in batch.notes if "never arrived" in n]
    assert "t.json" in note and sid(2) in note and sid(99) in note


def test_an_identical_duplicate_span_is_kept_once(tmp_path):
    spans = openinference_trace()
    write_json(tmp_path / "a.json", spans)
    write_json(tmp_path / "b.json", spans[:2])  # an exporter retry
    batch = _read(tmp_path, tmp_path)
    assert len(batch.tables["steps"]) == 6
    assert any("b.json" in n and "twice" in n for n in batch.notes)


# --------------------------------------------------------------------------- refusals


def _refused(path: Path, tmp_path: Path) -> list[str]:
    with pytest.raises(IngestFailed) as info:
        _read(path, tmp_path)
    return [str(p) for p in info.value.problems]


def _one(path: Path, tmp_path: Path, *words: str) -> str:
    (problem,) = _refused(path, tmp_path)
    assert path.name in problem
    for word in words:
        assert word in problem, problem
    return problem


def test_not_otlp(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    _one(tmp_path / "x.json", tmp_path, "is not OTLP", "resourceSpans")
    (tmp_path / "y.pb").write_bytes(b"\xff\xff\xff garbage")
    _one(tmp_path / "y.pb", tmp_path, "not OTLP protobuf")
    (tmp_path / "z.json").write_text("{not json")
    _one(tmp_path / "z.json", tmp_path, "not valid JSON")


def test_spans_without_a_trace_id(tmp_path):
    doc = json_doc([S(TRACE_A, sid(7), "lost", 0, 1)])
    del doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    (tmp_path / "t.json").write_text(json.dumps(doc))
    _one(tmp_path / "t.json", tmp_path, sid(7), "'lost'", "no trace id")


def test_two_different_spans_under_one_id(tmp_path):
    spans = [S(TRACE_A, sid(1), "root", 0, 5), S(TRACE_A, sid(1), "impostor", 1, 2)]
    _one(write_json(tmp_path / "t.json", spans), tmp_path, sid(1), "'impostor'", "unique")


def test_a_cycle_of_parent_links(tmp_path):
    spans = [S(TRACE_A, sid(1), "a", 0, 5, parent=sid(3)), S(TRACE_A, sid(2), "b", 1, 2, parent=sid(1)),
             S(TRACE_A, sid(3), "c", 1, 2, parent=sid(2))]
    _one(write_json(tmp_path / "t.json", spans), tmp_path, "cycle", sid(1), sid(2), sid(3), TRACE_A)


def test_a_ten_megabyte_attribute(tmp_path):
    spans = [S(TRACE_A, sid(1), "root", 0, 5), S(TRACE_A, sid(2), "huge", 1, 2, parent=sid(1),
                                                   attrs={"input.value": "x" * 10_000_000})]
    _one(write_json(tmp_path / "t.json", spans), tmp_path, sid(2), "'input.value'", "10.0 MB")


def test_invalid_utf8(tmp_path):
    raw = json.dumps(json_doc([S(TRACE_A, sid(1), "root", 0, 5, attrs={"k": "caf\u00e9"})]), ensure_ascii=False).encode()
    (tmp_path / "t.json").write_bytes(raw.replace("\u00e9".encode(), b"\xe9"))
    _one(tmp_path / "t.json", tmp_path, "not UTF-8")
    pb = write_pb(tmp_path / "t.pb", [S(TRACE_A, sid(1), "rootX", 0, 5)]).read_bytes()
    (tmp_path / "t.pb").write_bytes(pb.replace(b"rootX", b"root\xff"))
    _one(tmp_path / "t.pb", tmp_path, "not valid UTF-8")
    (tmp_path / "s.json").write_text(json.dumps(json_doc([S(TRACE_A, sid(1), "root", 0, 5)])).replace("root", "\\ud800"))
    _one(tmp_path / "s.json", tmp_path, "surrogate")


def test_an_empty_export(tmp_path):
    (tmp_path / "e.json").write_text("")
    _one(tmp_path / "e.json", tmp_path, "empty")
    (tmp_path / "r.json").write_text('{"resourceSpans": []}')
    _one(tmp_path / "r.json", tmp_path, "no spans", "kept")


def test_a_bad_file_among_good_ones_refuses_the_folder_and_keeps_the_store(tmp_path):
    store = tmp_path / "store"
    good = tmp_path / "good"
    good.mkdir()
    write_json(good / "a.json", openinference_trace())
    ingest("otlp", good, store, corpus="mine")
    before = (store / MANIFEST).read_text()
    write_json(good / "b.json", [S(TRACE_B, sid(1), "a", 0, 1, parent=sid(2)), S(TRACE_B, sid(2), "b", 0, 1, parent=sid(1))])
    with pytest.raises(IngestFailed):
        ingest("otlp", good, store, corpus="mine")
    assert (store / MANIFEST).read_text() == before


# --------------------------------------------------------------------------- the command line


def test_cli_ingest_and_refusals(tmp_path, capsys):
    store = str(tmp_path / "store")
    path = write_json(tmp_path / "t.json", openinference_trace())
    assert main(["--store", store, "ingest", "otlp", str(path)]) == 2
    assert "needs --corpus CORPUS" in capsys.readouterr().err
    assert usage_problem("whowhen", "x", {"corpus": "a"}) is not None  # --corpus is refused elsewhere
    assert main(["--store", store, "ingest", "otlp", str(path), "--corpus", "mine"]) == 0
    assert "1 runs from 1 traces, 6 steps" in capsys.readouterr().err
    assert main(["--store", store, "ingest", "otlp", str(path), "--corpus", "Bad Name"]) == 1
    assert "lower-case" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": "no"}')
    assert main(["--store", store, "ingest", "otlp", str(bad), "--corpus", "mine"]) == 1
    err = capsys.readouterr().err
    assert "bad.json" in err and "store was left unchanged" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:
        main(["--store", store, "ingest", "otlp", str(path), "--corpus", "x", "--group", "day"])
    assert exit_.value.code == 2


def test_two_corpora_side_by_side_and_no_other_source_replaced(tmp_path):
    store = tmp_path / "store"
    ingest("otlp", write_json(tmp_path / "a.json", openinference_trace()), store, corpus="team-a")
    ingest("otlp", write_json(tmp_path / "b.json", genai_trace()), store, corpus="team-b")
    from auditatlas.store import read_manifest, source_corpora

    assert source_corpora(store) == {"team-a": ["team-a"], "team-b": ["team-b"]}
    write_source(store, "whowhen", {"corpora": [{"corpus": "whowhen", "title": "W", "kind": "real"}]},
                 meta={"format": "whowhen"})
    with pytest.raises(AtlasError, match="holds the whowhen import"):
        ingest("otlp", tmp_path / "a.json", store, corpus="whowhen")
    assert set(read_manifest(store)["sources"]) == {"team-a", "team-b", "whowhen"}


# --------------------------------------------------------------------------- the views on it


def test_overview_queries_and_info_on_an_otlp_corpus(tmp_path, capsys):
    import queries
    from auditatlas.analyses import step_rates as rates

    store = tmp_path / "store"
    spans = openinference_trace()
    spans[1].attrs["annotation.label"] = 1
    spans[3].attrs["annotation.label"] = 0
    ingest("otlp", write_json(tmp_path / "t.json", spans + genai_trace()), store, corpus="mine")
    corpora = queries.run("corpora", root=store)
    assert corpora["corpus"].tolist() == ["mine"]
    summary = queries.run("slice_summary", {"slice": {"corpus": ["mine"]}}, root=store)
    assert (int(summary["runs"].sum()), int(summary["steps"].sum()), int(summary["labeled_steps"].sum())) == (2, 11, 2)
    counts = queries.run("action_rates", {"slice": {}}, root=store)
    labeled = counts[counts["labeled_steps"] > 0]
    success = rates.action_success(labeled).set_index(["backbone", "action"])
    assert success.loc[("gpt-4o", "LLM"), "success_pct"] == pytest.approx(50.0)
    assert not rates.anomaly_by_capability(labeled).empty
    rates.silent_failures(queries.run("silent_failures", {"slice": {}}, root=store))
    assert main(["--store", str(store), "info"]) == 0
    assert "mine" in capsys.readouterr().out
    assert main(["--store", str(store), "board", "post-detection", "--corpus", "mine"]) == 1
    err = capsys.readouterr().err
    # One sentence saying what the corpus lacks (here: enough failed and succeeded runs).
    assert err.count("\n") == 1 and "corpus 'mine' has 1 failed and 1 succeeded" in err


def test_step_times_survive_as_nanoseconds(tmp_path):
    batch = _read(write_json(tmp_path / "t.json", openinference_trace()), tmp_path)
    assert _extra(_steps(batch)[sid(1)])["start_time_unix_nano"] == T0
    assert TRACE_B  # imported for the session test's second trace


# --------------------------------------------------------------------------- batched file ingest


def _split_folder(tmp_path: Path) -> Path:
    """Trace A split over a.json and b.pb, trace B alone in c.jsonl."""
    folder = tmp_path / "exports"
    folder.mkdir()
    a = openinference_trace()
    write_json(folder / "a.json", a[:2])
    write_pb(folder / "b.pb", a[2:])
    write_jsonl(folder / "c.jsonl", [genai_trace()])
    return folder


def _by_run(tables: dict) -> dict:
    return {name: sorted(rows, key=lambda r: (r.get("run_id") or "", r.get("step_idx") or 0, r.get("src_idx") or 0,
                                              r.get("dst_idx") or 0)) for name, rows in tables.items()}


def test_batched_read_keeps_traces_whole_and_gives_the_one_batch_rows(tmp_path):
    folder = _split_folder(tmp_path)
    whole = _read(folder, tmp_path)
    streamed = otlp.read_batches(folder, Context(store=tmp_path / "store"), corpus="mine", batch_spans=1)
    parts = list(streamed.parts)
    # Every file its own batch but for a.json + b.pb, which share trace A; then the corpus row.
    assert [sorted({r["run_id"] for r in p.get("runs", [])}) for p in parts] == [
        [f"mine:{TRACE_A}"], [f"mine:{TRACE_B}"], []]
    merged: dict[str, list] = {}
    for part in parts:
        for name, rows in part.items():
            merged.setdefault(name, []).extend(rows)
    assert _by_run(merged) == _by_run(whole.tables)
    assert streamed.notes[0] == whole.notes[0]


def test_a_batch_refused_after_others_were_written_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    store = tmp_path / "store"
    ingest("otlp", _split_folder(tmp_path), store, corpus="mine")
    manifest = (store / MANIFEST).read_bytes()
    sources = sorted(p.name for p in store.iterdir())
    bad = tmp_path / "bad"
    bad.mkdir()
    write_json(bad / "a.json", openinference_trace())  # fine: mapped and written as batch 1
    write_json(bad / "b.json", [S(TRACE_B, sid(1), "root", 0, 5), S(TRACE_B, sid(1), "impostor", 1, 2)])
    monkeypatch.setattr(otlp, "BATCH_SPANS", 1)
    with pytest.raises(IngestFailed) as info:
        ingest("otlp", bad, store, corpus="mine")
    assert [p.file for p in info.value.problems] == ["b.json"]
    assert (store / MANIFEST).read_bytes() == manifest
    assert sorted(p.name for p in store.iterdir()) == sources  # no staging folder left behind


def test_bucket_width_grows_one_hex_digit_per_sixteen_times_the_spans(monkeypatch):
    monkeypatch.setattr(otlp, "BUCKET_SPANS", 25_000)
    assert otlp.bucket_width(0) == 1  # not counted before reading (a file read whole)
    assert otlp.bucket_width(400_000) == 1  # 16 buckets of 25,000
    assert otlp.bucket_width(400_001) == 2
    assert otlp.bucket_width(1_000_000) == 2  # 256 buckets of ~3,900
    assert otlp.bucket_width(6_400_000) == 2
    assert otlp.bucket_width(6_400_001) == 3


def test_two_digit_buckets_merge_a_bucket_at_a_time_and_land_sorted(tmp_path, monkeypatch):
    """Forty traces over eight files, batched one file at a time so their runs interleave; with
    buckets of two hex digits and merged parts smaller than a bucket, the commit merges only the
    rows of one prefix at a time; with the default part size the whole small source is merged in
    one read of each part; the store holds the same runs, in run order, either way and as with
    one digit."""
    import random

    import duckdb

    from auditatlas import store_parts
    from auditatlas.store import table_files

    rng = random.Random(7)
    folder = tmp_path / "exports"
    folder.mkdir()
    for f in range(8):
        spans = []
        for _ in range(5):
            trace = f"{rng.getrandbits(128):032x}"
            spans += [S(trace, sid(1), "root", 0, 9, attrs={"openinference.span.kind": "AGENT"}),
                      S(trace, sid(2), "call", 1, 2, parent=sid(1), attrs={"openinference.span.kind": "LLM"})]
        write_json(folder / f"f{f}.json", spans)

    merged: list[set[str]] = []
    parts_read: list[str] = []
    real_read = store_parts._read_row_groups

    def spy(path, row_groups, footer=None):
        table = real_read(path, row_groups, footer)
        if path.parent.name == "steps":
            merged.append({r[len("mine:"):][:2] for r in table.column("run_id").to_pylist()})
            parts_read.append(path.name)
        return table

    monkeypatch.setattr(store_parts, "_read_row_groups", spy)
    monkeypatch.setattr(otlp, "BATCH_SPANS", 1)
    monkeypatch.setattr(otlp, "BUCKET_SPANS", 1)  # 80 spans > 16 buckets of 1: two digits
    monkeypatch.setattr(store_parts, "MERGED_PART_ROWS", 1)  # every bucket is larger than a part
    ingest("otlp", folder, tmp_path / "two", corpus="mine")
    assert merged and all(len(prefixes) == 1 for prefixes in merged)  # each read: one two-digit prefix

    monkeypatch.undo()
    monkeypatch.setattr(store_parts, "_read_row_groups", spy)
    monkeypatch.setattr(otlp, "BATCH_SPANS", 1)
    monkeypatch.setattr(otlp, "BUCKET_SPANS", 1)
    merged.clear(), parts_read.clear()
    ingest("otlp", folder, tmp_path / "whole", corpus="mine")
    assert len(merged) > 1 and len(parts_read) == len(set(parts_read))  # 80 rows: each part read once
    monkeypatch.setattr(otlp, "BUCKET_SPANS", 25_000)
    ingest("otlp", folder, tmp_path / "one", corpus="mine")

    def rows(root):
        files = table_files(root, "steps")
        return duckdb.connect().execute("SELECT run_id, step_idx, action FROM read_parquet($1)", [files]).fetchall()

    two, one = rows(tmp_path / "two"), rows(tmp_path / "one")
    assert rows(tmp_path / "whole") == two
    assert len(two) == 80 and two == one  # the same rows in the same (file) order
    assert two == sorted(two, key=lambda r: (r[0], r[1]))
