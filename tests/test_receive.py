"""The live OTLP receiver: real OpenTelemetry exporters and plain HTTP clients against it."""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditatlas.errors import AtlasError
from auditatlas.ingest import ingest
from auditatlas.store import health, read_manifest, source_run_ids, table_files
from otlp_fixtures import TRACE_A, TRACE_B, S, genai_trace, json_doc, openinference_trace, pb_request, sid, write_json
from receive_support import post, rows, running

REPO = Path(__file__).resolve().parent.parent
PROTOBUF = "application/x-protobuf"


def _sdk_spans(provider) -> None:
    """An OpenInference run (agent -> LLM -> tool, then a second agent) and a GenAI run, with
    the attribute names set by hand as the instrumentors set them."""
    from opentelemetry.trace import SpanKind, Status, StatusCode

    tracer = provider.get_tracer("my-agents", "1.0")
    with tracer.start_as_current_span("planner", attributes={"openinference.span.kind": "AGENT",
                                                             "agent.name": "planner", "input.value": "plan a trip"}):
        with tracer.start_as_current_span("ChatCompletion", kind=SpanKind.CLIENT, attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "output.value": "search first",
                "llm.token_count.prompt": 120, "llm.token_count.completion": 30}):
            with tracer.start_as_current_span("search", attributes={
                    "openinference.span.kind": "TOOL", "tool.name": "web_search", "output.value": "3 results"}):
                pass
        with tracer.start_as_current_span("writer", attributes={"openinference.span.kind": "AGENT",
                                                                "agent.name": "writer"}) as writer:
            writer.set_status(Status(StatusCode.ERROR, "gave up"))
    with tracer.start_as_current_span("invoke_agent triage", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}) as root:
        with tracer.start_as_current_span("chat gpt-4.1", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1",
                "gen_ai.usage.input_tokens": 42, "gen_ai.usage.output_tokens": 7}):
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}):
                pass
        root.set_status(Status(StatusCode.OK))


def test_real_exporter_spans_in_both_conventions_give_the_rows_of_the_file_ingest(tmp_path):
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    store = tmp_path / "received"
    with running(store) as live:
        provider = TracerProvider(resource=Resource.create({"service.name": "my-agents"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=live.url, compression=Compression.Gzip)))
        kept = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(kept))
        _sdk_spans(provider)
        provider.shutdown()  # the batch processor exports what it holds
    assert live.lines[-1] == "wrote 2 traces (7 spans) to corpus live"
    request = encode_spans(kept.get_finished_spans())
    (tmp_path / "export.pb").write_bytes(request.SerializeToString())
    (tmp_path / "export.json").write_text(json.dumps(MessageToDict(request)))
    for name in ("export.pb", "export.json"):
        ingest("otlp", tmp_path / name, tmp_path / name.replace(".", "-"), corpus="live")
    received = {t: rows(store, t, "live") for t in ("runs", "steps", "edges")}
    assert len(received["runs"]) == 2 and len(received["steps"]) == 7
    by_agent = {(r["agent"], r["action"]) for r in received["steps"]}
    assert {("planner", "LLM"), ("planner", "TOOL:web_search"), ("writer", "AGENT"), ("triage", "LLM:chat"),
            ("triage", "TOOL:get_weather")} <= by_agent
    assert sorted(r["backbone"] for r in received["runs"]) == ["gpt-4.1", "gpt-4o"]
    for name in ("export-pb", "export-json"):
        assert {t: rows(tmp_path / name, t, "live") for t in received} == received


def _scripted_openai_server():
    """A local stand-in for the OpenAI API: every chat completion answers the same (no network)."""
    import socket
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request):
        body = await request.json()
        return JSONResponse({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": body["model"] + "-2025",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris is sunny."},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    srv = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])]),
                                        log_level="warning"))
    threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not srv.started:
        time.sleep(0.01)
    return srv, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_the_openinference_instrumentor_of_the_openai_client(tmp_path):
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    store = tmp_path / "store"
    api, base_url = _scripted_openai_server()
    try:
        with running(store) as live:
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=live.url)))
            OpenAIInstrumentor().instrument(tracer_provider=provider)
            try:
                client = openai.OpenAI(base_url=base_url, api_key="not-a-key", max_retries=0)
                with provider.get_tracer("agents").start_as_current_span("planner", attributes={
                        "openinference.span.kind": "AGENT", "agent.name": "planner"}):
                    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "weather?"}])
            finally:
                OpenAIInstrumentor().uninstrument()
            provider.shutdown()
    finally:
        api.should_exit = True
    (run,) = rows(store, "runs", "live")
    agent, llm = rows(store, "steps", "live")
    assert (run["backbone"], run["n_steps"]) == ("gpt-4o-2025", 2)
    assert (agent["agent"], agent["action"]) == ("planner", "AGENT")
    assert (llm["agent"], llm["action"], llm["tokens_in"], llm["tokens_out"]) == ("planner", "LLM", 12, 4)
    assert "Paris is sunny." in llm["text_out"] and "weather?" in llm["text_in"]


def test_json_bodies_plain_gzip_and_deflate(tmp_path):
    store = tmp_path / "store"
    spans = openinference_trace()
    with running(store) as live:
        for encoding, part in ((None, spans[:2]), ("gzip", spans[2:4]), ("deflate", spans[4:])):
            answer = post(live.url, json.dumps(json_doc(part)).encode(), encoding=encoding)
            assert (answer.status, answer.headers["content-type"], answer.json()) == (200, "application/json", {})
        answer = post(live.url, pb_request(genai_trace()).SerializeToString(), PROTOBUF, "gzip")
        assert (answer.status, answer.headers["content-type"], answer.body) == (200, PROTOBUF, b"")
    ingest("otlp", write_json(tmp_path / "t.json", spans + genai_trace()), tmp_path / "file", corpus="live")
    for table in ("runs", "steps", "edges"):
        assert rows(store, table, "live") == rows(tmp_path / "file", table, "live")


def test_partial_success_names_the_rejected_spans_and_keeps_the_others(tmp_path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    store = tmp_path / "store"
    good = openinference_trace()
    no_trace = S("", sid(7), "lost", 0, 1)
    with running(store) as live:
        answer = post(live.url, json.dumps(json_doc(good[:3] + [no_trace])).encode())
        partial = answer.json()["partialSuccess"]
        assert answer.status == 200 and int(partial["rejectedSpans"]) == 1
        assert "'lost'" in partial["errorMessage"] and "has no trace id" in partial["errorMessage"]
        # The same span id again with other content: rejected; an identical repeat (a retry): kept once.
        changed = S(TRACE_A, sid(2), "renamed", 1, 3, parent=sid(1))
        answer = post(live.url, pb_request(good[:3] + [changed]).SerializeToString(), PROTOBUF)
        response = ExportTraceServiceResponse.FromString(answer.body)
        assert answer.status == 200 and response.partial_success.rejected_spans == 1
        assert sid(2) in response.partial_success.error_message and "different content" in response.partial_success.error_message
        assert post(live.url, json.dumps(json_doc(good[3:])).encode()).json() == {}
    assert any(line.startswith("partly rejected request 1 from 127.0.0.1:") for line in live.lines)
    assert len(rows(store, "steps", "live")) == 6


def _status(answer):
    from google.rpc.status_pb2 import Status

    if answer.headers["content-type"] == "application/json":
        return answer.json()["message"]
    return Status.FromString(answer.body).message


def test_bodies_that_are_refused(tmp_path):
    store = tmp_path / "store"
    good = json.dumps(json_doc(openinference_trace())).encode()
    with running(store, max_body=4096) as live:
        cases = {
            "not json": (post(live.url, b"{not json"), 400, "is not OTLP/JSON"),
            "not protobuf": (post(live.url, b"\xff\x00garbage", PROTOBUF), 400, "is not OTLP protobuf"),
            "json as protobuf": (post(live.url, good, PROTOBUF), 400, "send it as application/json"),
            "no resourceSpans": (post(live.url, b'{"spans": []}'), 400, "resourceSpans"),
            "cut gzip": (post(live.url, gzip.compress(good)[:40], headers={"Content-Encoding": "gzip"}), 400,
                         "not complete gzip"),
            "text": (post(live.url, good, "text/plain"), 415, "content type 'text/plain' is not OTLP"),
            "no type": (post(live.url, good, None), 415, "send application/x-protobuf or application/json"),
            "brotli": (post(live.url, good, headers={"Content-Encoding": "br"}), 415, "'br' is not supported"),
            "too large": (post(live.url, good + b" " * 5000), 413, "over the receiver's limit of 4,096"),
            "inflates too far": (post(live.url, b'{"resourceSpans": []' + b" " * 100_000 + b"}", encoding="gzip"),
                                 413, "inflates to more than 4,096 bytes"),
        }
        assert post(live.url, b'{"resourceSpans": []}').status == 200  # an empty export is no error
        assert post(live.url.replace("/v1/traces", "/v1/logs"), good).status == 404
    for name, (answer, status, words) in cases.items():
        assert (name, answer.status) == (name, status)
        message = _status(answer)
        assert words in message and message.startswith("request "), (name, message)
    assert sum(line.startswith("rejected (") for line in live.lines) == len(cases)
    assert "live" not in read_manifest(store)["sources"]  # nothing was written


def test_at_the_cap_a_request_waits_for_room_and_the_writer_writes_early(tmp_path):
    store = tmp_path / "store"
    with running(store, idle_s=60, max_spans=6) as live:
        assert post(live.url, json.dumps(json_doc(openinference_trace())).encode()).status == 200
        answer = post(live.url, json.dumps(json_doc(genai_trace())).encode())
        assert answer.status == 503 and answer.headers["retry-after"] == "2"
        assert "not yet written" in _status(answer)
        live.wait_writes(1, timeout=30)  # written early: well before 60 s of idleness would write it
        assert post(live.url, json.dumps(json_doc(genai_trace())).encode()).status == 200
        assert live.receiver.held.spans <= 6
    assert len(rows(store, "runs", "live")) == 2


def test_a_late_span_reopens_its_trace_and_a_forgotten_trace_continues_in_a_run_of_its_own(tmp_path):
    import queries

    store = tmp_path / "store"
    spans = openinference_trace()
    late = S(TRACE_A, sid(9), "late", 9, 9.5, parent=sid(1), attrs={"openinference.span.kind": "CHAIN"})
    with running(store, max_spans=6) as live:
        post(live.url, json.dumps(json_doc(spans[1:])).encode())
        live.wait_writes(1)
        query = queries.runner(store)
        assert query("slice_summary", {"slice": {"corpus": ["live"]}})["steps"].sum() == 5
        post(live.url, json.dumps(json_doc(spans[:1])).encode())  # the root ends last
        live.wait_writes(2)
        # The runner made before the write answers from the new store version.
        assert query("slice_summary", {"slice": {"corpus": ["live"]}})["steps"].sum() == 6
        post(live.url, json.dumps(json_doc(genai_trace())).encode())  # room made by forgetting trace A
        live.wait_writes(3)
        post(live.url, json.dumps(json_doc([late])).encode())
        live.wait_writes(4)
    assert "1 of them re-opened with late spans" in live.lines[1]
    ingest("otlp", write_json(tmp_path / "a.json", spans), tmp_path / "file", corpus="live")
    whole = [r for r in rows(store, "steps", "live") if r["run_id"] == f"live:{TRACE_A}"]
    assert whole == rows(tmp_path / "file", "steps", "live")
    assert [r["run_id"] for r in rows(store, "runs", "live")] == [f"live:{TRACE_A}", f"live:{TRACE_A}~2", f"live:{TRACE_B}"]
    # What a write asks of the held ids: those of its own traces and their later runs, no other.
    assert source_run_ids(store, "live", {f"live:{TRACE_A}"}) == {f"live:{TRACE_A}", f"live:{TRACE_A}~2"}
    assert source_run_ids(store, "live", {f"live:{TRACE_B}", "live:ffff"}) == {f"live:{TRACE_B}"}
    assert source_run_ids(store, "live", set()) == set() == source_run_ids(store, "other", {f"live:{TRACE_B}"})
    # Every write keeps the receiver's promise: each segment the manifest lists is in run order
    # on its own (store_segments), and together they hold every step once.
    import pyarrow.parquet as pq

    by_segment: dict[str, list] = {}
    for f in table_files(store, "steps"):
        keys = zip(*pq.read_table(f, columns=["run_id", "step_idx"]).to_pydict().values())
        by_segment.setdefault(Path(f).name.split("-")[1], []).extend(keys)
    assert all(keys == sorted(keys) for keys in by_segment.values())
    assert [len(keys) for _, keys in sorted(by_segment.items())] == read_manifest(store)["sources"]["live"]["segments"]["steps"]
    assert sum(len(keys) for keys in by_segment.values()) == 12


def test_a_failed_write_keeps_the_spans_and_tries_again(tmp_path, monkeypatch):
    from auditatlas.ingest.receiver import service

    real, calls = service.write_traces, []

    def full_disk_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "write_traces", full_disk_once)
    store = tmp_path / "store"
    with running(store) as live:
        post(live.url, json.dumps(json_doc(openinference_trace())).encode())
        live.wait_writes(1)
    assert live.lines[0].startswith("could not write 1 trace(s) to corpus live (") and "tried again in 0.2 s" in live.lines[0]
    assert live.lines[1] == "wrote 1 traces (6 spans) to corpus live"
    assert len(rows(store, "steps", "live")) == 6


def test_a_labeled_corpus_takes_more_traces_and_a_bad_name_is_refused(tmp_path):
    store = tmp_path / "store"
    ingest("otlp", write_json(tmp_path / "a.json", openinference_trace()), store, corpus="mine")
    ingest("labels", _labels(tmp_path), store, corpus="mine")
    with running(store, corpus="mine") as live:  # a labeled OTLP corpus takes more traces, labels kept
        post(live.url, json.dumps(json_doc(genai_trace())).encode())
    entry = read_manifest(store)["sources"]["mine"]
    assert entry["format"] == "labels" and entry["received"] == "OTLP/HTTP"
    assert [r["label"] for r in rows(store, "steps", "mine") if r["step_id"] == sid(2)] == [1]
    assert len(rows(store, "runs", "mine")) == 2
    from auditatlas.ingest.receiver.service import Receiver

    with pytest.raises(AtlasError, match="must be lower-case"):
        Receiver(store, "Bad Name")


def _labels(tmp_path: Path) -> Path:
    path = tmp_path / "labels.csv"
    path.write_text(f"trace_id,span_id,label\n{TRACE_A},{sid(2)},1\n")
    return path


# --------------------------------------------------------------------------- the command


def _start(store: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(store), "receive", "--corpus", "live",
                             "--port", "0", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = proc.stdout.readline()
    assert first.startswith("receiving OTLP/HTTP on http://127.0.0.1:"), first + proc.stderr.read()
    return proc, first.split(" on ", 1)[1].split()[0]


def _wait_line(proc: subprocess.Popen, start: str) -> str:
    while True:
        line = proc.stdout.readline()
        assert line, "the receiver ended early: " + proc.stderr.read()
        if line.startswith(start):
            return line


def test_the_command_writes_on_sigterm_and_kill_9_keeps_every_acknowledged_trace(tmp_path):
    store = tmp_path / "store"
    ingest("otlp", write_json(tmp_path / "earlier.json", genai_trace()), store, corpus="live")
    proc, url = _start(store, "--idle", "0.3")
    try:
        assert post(url, json.dumps(json_doc(openinference_trace())).encode()).status == 200
        assert _wait_line(proc, "wrote") == "wrote 1 traces (6 spans) to corpus live\n"
        held = openinference_trace("5" * 32)
        assert post(url, json.dumps(json_doc(held)).encode()).status == 200
    finally:
        proc.kill()  # SIGKILL: the last trace was held, maybe being written
        proc.wait(10)
    assert health(store, deep=True) == []
    run_ids = [r["run_id"] for r in rows(store, "runs", "live")]
    assert {f"live:{TRACE_A}", f"live:{TRACE_B}"} <= set(run_ids) <= {f"live:{TRACE_A}", f"live:{TRACE_B}", "live:" + "5" * 32}

    proc, url = _start(store, "--idle", "60")
    try:
        assert post(url, json.dumps(json_doc(openinference_trace("6" * 32))).encode()).status == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    # The trace answered 200 before the kill was journaled: the start wrote it, if the kill had not.
    replayed = "live:" + "5" * 32 not in run_ids
    assert ("replayed 6 span(s) of 1 journaled request(s)" in out) == replayed
    assert "wrote 1 traces (6 spans) to corpus live" in out and f"stopped; {1 + replayed} write(s)" in out
    assert "live:" + "6" * 32 in {r["run_id"] for r in rows(store, "runs", "live")}
    assert set(run_ids) | {"live:" + "5" * 32} <= {r["run_id"] for r in rows(store, "runs", "live")}


def test_the_command_says_one_sentence_for_a_port_in_use(tmp_path, capsys):
    import socket

    from auditatlas.cli import main

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        code = main(["--store", str(tmp_path / "s"), "receive", "--corpus", "live", "--port", str(holder.getsockname()[1])])
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "cannot listen on 127.0.0.1 port" in err
