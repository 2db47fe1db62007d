"""The receiver's bounds and its smaller answers: a request that alone exceeds a cap is 413
(never a retryable 503), the decoding budget answers 503 + Retry-After, compressed files are
inflated in a stream and refused past a limit, empty bodies, self-parented spans, non-finite
numbers; and the journal's replay after a kill between the store's commit and the journal's
truncation. Real HTTP on localhost, a real store."""
from __future__ import annotations

import gzip
import json
import math
import socket
import time
from pathlib import Path

import duckdb

from auditatlas.ingest.kit import compressed
from auditatlas.ingest.otlp_spans import decode_body
from auditatlas.ingest.receiver import Settings
from auditatlas.ingest.receiver.journal import journal_path
from auditatlas.ingest.receiver.service import Receiver
from auditatlas.store import table_files
from cli_support import run_cli
from otlp_fixtures import TRACE_A, S, json_doc, openinference_trace, pb_request, sid, write_json
from receive_support import post, rows, running

PROTOBUF = "application/x-protobuf"


def _status(answer) -> str:
    from google.rpc.status_pb2 import Status

    if answer.headers["content-type"] == "application/json":
        return answer.json()["message"]
    return Status.FromString(answer.body).message


def test_a_request_with_more_spans_than_the_cap_is_413_not_retryable(tmp_path):
    store = tmp_path / "store"
    spans = openinference_trace()  # 6 spans
    with running(store, idle_s=60, max_spans=5) as live:
        for body, kind in ((json.dumps(json_doc(spans)).encode(), "application/json"),
                           (pb_request(spans).SerializeToString(), PROTOBUF)):
            answer = post(live.url, body, kind)
            assert answer.status == 413 and "retry-after" not in answer.headers
            message = _status(answer)
            assert "holds 6 new spans, more than the receiver holds at once (5, --max-spans)" in message
            assert "the request alone exceeds the cap" in message
        assert post(live.url, json.dumps(json_doc(spans[:5])).encode()).status == 200  # five fit
    assert len(rows(store, "steps", "live")) == 5


def test_past_the_decoding_budget_a_request_gets_503_with_retry_after(tmp_path):
    """One request's body arrives slowly and holds 6,000 bytes of the 8,192-byte budget; a second
    of 3,000 bytes has no room meanwhile, and has it once the first is answered."""
    store = tmp_path / "store"
    first = json.dumps(json_doc(openinference_trace())).encode()
    first += b" " * (6000 - len(first))
    second = json.dumps(json_doc(openinference_trace("7" * 32)[:2])).encode()
    second += b" " * (3000 - len(second))
    with running(store, max_body=8192, max_decoding=8192) as live:
        port = int(live.url.split(":")[2].split("/")[0])
        slow = socket.create_connection(("127.0.0.1", port), timeout=20)
        try:
            slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(first) + first[:100])
            deadline = time.monotonic() + 20
            while live.receiver.decoding.taken == 0:  # the first request is being read
                assert time.monotonic() < deadline
                time.sleep(0.01)
            busy = post(live.url, second)
            assert busy.status == 503 and busy.headers["retry-after"] == "2"
            assert "reading and decoding 6,000 bytes of other requests, its limit of 8,192 (--max-decoding-mb)" \
                in _status(busy)
            slow.sendall(first[100:])
            assert slow.recv(65536).startswith(b"HTTP/1.1 200")
        finally:
            slow.close()
        assert post(live.url, second).status == 200  # room again
        assert live.receiver.decoding.taken == 0
    assert len(rows(store, "steps", "live")) == 8


def test_decoding_below_the_body_limit_is_refused_in_one_sentence(tmp_path):
    done = run_cli("--store", str(tmp_path / "s"), "receive", "--corpus", "live", "--port", "0",
                   "--max-body-mb", "8", "--max-decoding-mb", "4")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "--max-decoding-mb (4) is below --max-body-mb (8)" in done.stderr


def test_ingest_otlp_inflates_a_gz_file_in_a_stream_and_refuses_it_past_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(compressed, "MAX_INFLATED_BYTES", 1024 * 1024)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as f:  # 8 MiB of spaces, about 8 kB compressed
        for _ in range(128):
            f.write(b" " * 65536)
    assert bomb.stat().st_size < 64 * 1024
    done = run_cli("--store", str(tmp_path / "s"), "ingest", "otlp", str(bomb), "--corpus", "mine")
    assert done.returncode == 1
    problems = [ln for ln in done.stderr.splitlines() if "bomb.json.gz" in ln]
    assert len(problems) == 1 and "inflates to more than 1 MiB, the limit for one compressed file" in problems[0]
    assert "Traceback" not in done.stderr
    # A gzip file under the limit still reads.
    small = tmp_path / "ok.json.gz"
    small.write_bytes(gzip.compress(json.dumps(json_doc(openinference_trace())).encode()))
    assert run_cli("--store", str(tmp_path / "s"), "ingest", "otlp", str(small), "--corpus", "mine").returncode == 0


def test_read_maybe_gzip_holds_at_most_the_limit():
    """What refuses the bomb above, on its own: it stops at the limit instead of inflating all."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.gz"
        with gzip.open(path, "wb", compresslevel=1) as f:
            for _ in range(64 * 16):  # 64 MiB
                f.write(b"\0" * 65536)
        started = time.process_time()
        try:
            compressed.read_maybe_gzip(path, limit=1024 * 1024)
        except compressed.TooLarge as exc:
            assert exc.limit == 1024 * 1024
        else:
            raise AssertionError("64 MiB read under a 1 MiB limit")
        assert time.process_time() - started < 0.5  # 1 MiB inflated, not 64
        assert compressed.read_maybe_gzip(path, head=10) == b"\0" * 10


def test_empty_bodies_are_an_empty_request_in_both_encodings(tmp_path):
    with running(tmp_path / "store") as live:
        for body, kind in ((b"", "application/json"), (b"", PROTOBUF), (b"{}", "application/json"), (b"  \n", "application/json")):
            answer = post(live.url, body, kind)
            assert answer.status == 200, (body, kind, answer.body)
            assert answer.body == (b"{}" if kind == "application/json" else b"")
        assert live.receiver.held.spans == 0


def test_a_self_parented_span_is_rejected_in_partial_success(tmp_path):
    spans = openinference_trace()[:3] + [S(TRACE_A, sid(9), "loop", 1, 2, parent=sid(9))]
    with running(tmp_path / "store") as live:
        answer = post(live.url, json.dumps(json_doc(spans)).encode())
        partial = answer.json()["partialSuccess"]
        assert answer.status == 200 and int(partial["rejectedSpans"]) == 1
        assert f"span {sid(9)} ('loop') of trace {TRACE_A} names itself as its parent" in partial["errorMessage"]
    assert len(rows(tmp_path / "store", "steps", "live")) == 3
    # The file ingest refuses the same span, naming it the same way.
    done = run_cli("--store", str(tmp_path / "f"), "ingest", "otlp", str(write_json(tmp_path / "t.json", spans)),
                   "--corpus", "mine")
    assert done.returncode == 1 and "names itself as its parent" in done.stderr


def test_non_finite_attribute_values_are_stored_as_valid_json_strings(tmp_path):
    doc = json_doc(openinference_trace()[:1])
    attributes = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes += [{"key": "my.nan", "value": {"doubleValue": "NaN"}},
                   {"key": "my.inf", "value": {"doubleValue": "Infinity"}},
                   {"key": "my.list", "value": {"arrayValue": {"values": [{"doubleValue": "-Infinity"},
                                                                          {"doubleValue": 1.5}]}}}]
    with running(tmp_path / "store") as live:
        assert post(live.url, json.dumps(doc).encode()).status == 200
        # protobuf doubles too
        pb = pb_request([S("8" * 32, sid(1), "pb", 0, 1, attrs={"my.nan": math.nan, "my.inf": -math.inf})])
        assert post(live.url, pb.SerializeToString(), PROTOBUF).status == 200
    files = table_files(tmp_path / "store", "steps")
    con = duckdb.connect()
    extras = [e for (e,) in con.execute("SELECT extra FROM read_parquet($1) ORDER BY run_id", [files]).fetchall()]
    assert con.execute("SELECT bool_and(json_valid(extra)) FROM read_parquet($1)", [files]).fetchone()[0]
    con.close()

    def strict(text: str):
        return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))

    attrs = [strict(e)["attributes"] for e in extras]
    assert attrs[0]["my.nan"] == "NaN" and attrs[0]["my.inf"] == "Infinity" and attrs[0]["my.list"] == ["-Infinity", 1.5]
    assert {"my.nan": "NaN", "my.inf": "-Infinity"}.items() <= attrs[1].items()


def _accept(receiver: Receiver, spans: list, n: int) -> None:
    body = json.dumps(json_doc(spans)).encode()
    accepted = receiver.accept(decode_body(body, "json", f"request {n}"), body, "json")
    assert accepted.kept == len(spans) and not accepted.rejected


def test_a_kill_between_the_store_commit_and_the_journal_truncation_repeats_nothing(tmp_path):
    """The journal's records are deleted after the store's commit; a kill between the two leaves
    them to the next start, whose replay finds their spans in the store and keeps them once."""
    store = tmp_path / "store"
    trace = openinference_trace()
    receiver = Receiver(store, "live", Settings(idle_s=0.0), say=lambda line: None)
    _accept(receiver, trace[1:], 1)  # the children first, the root later (a batch exporter's order)
    receiver.journal.forget = lambda seqs: None  # as if killed right after the store's commit
    receiver.flush(force=True)
    _accept(receiver, trace[:1], 2)  # the late root re-opens the written trace
    receiver.flush(force=True)
    before = rows(store, "steps", "live")
    assert len(before) == 6 and {r["run_id"] for r in before} == {f"live:{TRACE_A}"}
    receiver.journal.close()  # the process is gone: its journal still holds both records

    lines: list[str] = []
    again = Receiver(store, "live", Settings(idle_s=0.0), say=lines.append)
    assert again.journal.count() == 2
    assert again.replay() == 0  # every span is in the store already
    assert rows(store, "steps", "live") == before and again.journal.count() == 0
    # The trace is held again as written: a late span re-opens the same run, not a run "~2".
    _accept(again, [S(TRACE_A, sid(20), "late", 9, 10, parent=sid(1))], 3)
    again.flush(force=True)
    after = rows(store, "steps", "live")
    assert len(after) == 7 and {r["run_id"] for r in after} == {f"live:{TRACE_A}"}
    again.close()


def test_a_replay_of_spans_whose_earlier_records_are_gone_continues_the_trace_in_a_run_of_its_own(tmp_path):
    """The store holds the first write's spans and the journal no longer holds their record; the
    late span's record is replayed: kept once, as a run of its own (the trace is not held)."""
    store = tmp_path / "store"
    trace = openinference_trace()
    receiver = Receiver(store, "live", Settings(idle_s=60.0), say=lambda line: None)
    _accept(receiver, trace[1:], 1)
    receiver.flush(force=True)  # written, its record deleted
    _accept(receiver, trace[:1], 2)  # held only: a kill now
    receiver.journal.close()

    again = Receiver(store, "live", Settings(idle_s=60.0), say=lambda line: None)
    assert again.replay() == 1
    steps = rows(store, "steps", "live")
    assert sorted((r["run_id"], r["step_id"]) for r in steps) == sorted(
        [(f"live:{TRACE_A}", s.span) for s in trace[1:]] + [(f"live:{TRACE_A}~2", trace[0].span)])
    again.close()
    assert journal_path(store, "live").exists()


def test_a_replay_under_a_smaller_cap_writes_as_it_goes_and_keeps_every_span(tmp_path):
    """Restarted with --max-spans 4 after a kill that left 12 journaled spans in two requests of
    6: each request is held a part at a time, written between, and its record deleted only after."""
    store = tmp_path / "store"
    receiver = Receiver(store, "live", Settings(idle_s=60.0, max_spans=100), say=lambda line: None)
    _accept(receiver, openinference_trace(), 1)
    _accept(receiver, openinference_trace("9" * 32), 2)
    receiver.journal.close()  # killed: nothing written

    lines: list[str] = []
    again = Receiver(store, "live", Settings(idle_s=60.0, max_spans=4), say=lines.append)
    assert again.replay() == 12
    steps = rows(store, "steps", "live")
    assert len(steps) == 12 and len({(r["run_id"], r["step_id"]) for r in steps}) == 12
    assert again.journal.count() == 0 and sum(line.startswith("wrote ") for line in lines) >= 3
    again.close()
