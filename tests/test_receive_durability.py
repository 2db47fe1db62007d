"""Acknowledged means durable: `auditatlas receive` killed with SIGKILL at random moments (in the
middle of its writes too) under a real OTLP/HTTP exporter's load, restarted, and the store
checked span by span: every span answered 200 is there, none twice.

Real parts only: the receiver is its own process on a free localhost port, the senders are
the OpenTelemetry SDK's OTLP/HTTP exporter and plain HTTP posts of the SDK's protobuf encoding,
the store is the real Parquet store read with DuckDB. Nothing leaves localhost.
"""
from __future__ import annotations

import gzip
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from auditatlas.store import health, table_files
from receive_support import post

REPO = Path(__file__).resolve().parent.parent
PROTOBUF = "application/x-protobuf"
KILLS = 3  # bench/receive_kills.py runs the same loop with 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """`auditatlas receive` as a user runs it, restartable on the same port and store."""

    def __init__(self, store: Path, port: int, *extra: str) -> None:
        self.store, self.port, self.extra = store, port, extra
        self.url = f"http://127.0.0.1:{port}/v1/traces"
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "auditatlas.cli", "--store", str(self.store), "receive", "--corpus", "live",
             "--port", str(self.port), *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        first = self.proc.stdout.readline()
        assert first.startswith("receiving OTLP/HTTP"), first + self.proc.stderr.read()
        threading.Thread(target=self._keep_lines, args=(self.proc.stdout,), daemon=True).start()
        deadline = time.monotonic() + 60
        while True:  # answering: an empty request is a valid one (replay done, port served)
            try:
                if post(self.url, b"", PROTOBUF).status == 200:
                    return
            except OSError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, self.proc.stderr.read()
            time.sleep(0.05)

    def _keep_lines(self, out) -> None:
        """The receiver's lines after its first, until it exits. ``stop`` reads what is left with
        ``communicate``, which closes the pipe under this read: that ends it, it is not an error."""
        try:
            self.lines.extend(iter(out.readline, ""))
        except (ValueError, OSError):
            pass

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return err


def sdk_batches(n_traces: int, seed: int) -> list[list]:
    """Spans made by the real SDK (an agent span with LLM and tool children per trace), cut into
    exporter-sized batches that split traces across requests, as a batch processor does."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind

    made: list = []

    class Collect(SpanExporter):
        def export(self, spans):
            made.extend(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider(resource=Resource.create({"service.name": f"kill-test-{seed}"}))
    provider.add_span_processor(SimpleSpanProcessor(Collect()))
    tracer = provider.get_tracer("kill-test", "1.0")
    text = "the planner reads the task and picks a tool; " * 4
    for t in range(n_traces):
        with tracer.start_as_current_span("planner", attributes={"openinference.span.kind": "AGENT",
                                                                 "agent.name": "planner", "input.value": text}):
            for i in range(4):
                with tracer.start_as_current_span(f"step {i}", kind=SpanKind.CLIENT, attributes={
                        "openinference.span.kind": "TOOL" if i == 3 else "LLM", "output.value": f"{t}.{i} {text}"}):
                    pass
    provider.shutdown()
    rng = random.Random(seed)
    batches, i = [], 0
    while i < len(made):
        n = rng.randint(3, 17)
        batches.append(made[i:i + n])
        i += n
    return batches


def ids(spans) -> list[tuple[str, str]]:
    return [(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans]


class Sender(threading.Thread):
    """Sends its batches in order until told to stop; records the spans answered 200."""

    def __init__(self, url: str, batches: list[list], how: str) -> None:
        super().__init__(daemon=True)
        self.url, self.batches, self.how = url, batches, how
        self.acked: list[tuple[str, str]] = []
        self.sent: list[tuple[str, str]] = []
        self.answers: dict[str, int] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        if self.how == "exporter":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import SpanExportResult

            exporter = OTLPSpanExporter(endpoint=self.url, timeout=3)
        for batch in self.batches:
            if self.halt.is_set():
                break
            self.sent += ids(batch)
            if self.how == "exporter":
                ok = exporter.export(batch) == SpanExportResult.SUCCESS  # its own retries included
                self.answers["exporter ok" if ok else "exporter failed"] = self.answers.get(
                    "exporter ok" if ok else "exporter failed", 0) + 1
            else:
                ok = self._post(batch)
            if ok:
                self.acked += ids(batch)
            time.sleep(0.01)

    def _post(self, batch) -> bool:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        body = encode_spans(batch).SerializeToString()
        for _ in range(5):  # as an exporter does: 503 waits Retry-After, a refused connection a moment
            try:
                answer = post(self.url, body, PROTOBUF, encoding="gzip" if len(body) % 2 else None)
            except OSError:
                self.answers["no connection"] = self.answers.get("no connection", 0) + 1
                time.sleep(0.3)
                continue
            self.answers[str(answer.status)] = self.answers.get(str(answer.status), 0) + 1
            if answer.status == 200:
                return True
            if answer.status != 503:
                return False
            time.sleep(float(answer.headers.get("retry-after", "1")))
        return False


def stored(store: Path) -> list[tuple[str, str]]:
    """(trace id, span id) of every step of corpus live, duplicates kept."""
    files = table_files(store, "steps")
    if not files:
        return []
    con = duckdb.connect()
    try:
        return [tuple(r) for r in con.execute(
            "SELECT json_extract_string(extra, '$.trace_id'), step_id FROM read_parquet($1) WHERE corpus = 'live'",
            [files]).fetchall()]
    finally:
        con.close()


def journal_records(store: Path) -> int:
    db = sqlite3.connect(store / "receiver" / "live.journal")
    try:
        return db.execute("SELECT count(*) FROM records").fetchone()[0]
    finally:
        db.close()


def test_kill_9_at_random_moments_loses_no_acknowledged_span_and_repeats_none(tmp_path):
    started = time.monotonic()
    store = tmp_path / "store"
    receiver = Receiver(store, free_port(), "--idle", "0.2")
    receiver.start()
    senders = [Sender(receiver.url, sdk_batches(300, seed=1), "exporter"),
               Sender(receiver.url, sdk_batches(300, seed=2), "post")]
    for s in senders:
        s.start()
    rng = random.Random(44)
    writes_before_kill = []
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.3, 1.2))
            writes_before_kill.append(sum(ln.startswith("wrote ") for ln in receiver.lines))
            receiver.kill()
            assert health(store, deep=True) == []
            receiver.start()
        time.sleep(0.5)
    finally:
        for s in senders:
            s.halt.set()
        for s in senders:
            s.join(30)
    receiver.stop()

    acked = [i for s in senders for i in s.acked]
    sent = {i for s in senders for i in s.sent}
    held = stored(store)
    assert acked, [s.answers for s in senders]
    lost = set(acked) - set(held)
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged spans lost; answers {[s.answers for s in senders]}"
    assert len(held) == len(set(held)), f"{len(held) - len(set(held))} spans stored twice"
    assert set(held) <= sent
    assert journal_records(store) == 0  # a clean stop leaves nothing to replay
    assert any(writes_before_kill), "no kill came after a write: the receiver never wrote"
    assert time.monotonic() - started < 120


def test_a_200_is_on_disk_before_any_write_and_is_written_once_after_a_kill(tmp_path):
    """--idle 3600: nothing is written before the kill, so only the journal can keep the span."""
    store = tmp_path / "store"
    receiver = Receiver(store, free_port(), "--idle", "3600")
    receiver.start()
    batches = sdk_batches(3, seed=3)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    for batch in batches:
        assert post(receiver.url, encode_spans(batch).SerializeToString(), PROTOBUF).status == 200
    receiver.kill()
    assert stored(store) == []  # nothing written yet: the spans were held, and journaled
    assert journal_records(store) == len(batches)

    receiver.start()  # replays and writes at start
    receiver.kill()
    want = sorted(i for b in batches for i in ids(b))
    assert sorted(stored(store)) == want

    receiver.start()  # the journal was emptied after that write
    assert not any(line.startswith("replayed") for line in receiver.lines)
    receiver.stop()
    assert sorted(stored(store)) == want
    assert journal_records(store) == 0


def test_a_second_receiver_on_the_corpus_is_refused_in_one_sentence(tmp_path):
    store = tmp_path / "store"
    receiver = Receiver(store, free_port(), "--idle", "1")
    receiver.start()
    try:
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        second = subprocess.run([sys.executable, "-m", "auditatlas.cli", "--store", str(store), "receive", "--corpus",
                                 "live", "--port", "0"], capture_output=True, text=True, env=env, timeout=60)
    finally:
        receiver.stop()
    assert second.returncode == 1
    assert second.stderr.count("\n") == 1 and "corpus 'live' is being received already" in second.stderr


@pytest.fixture
def gzip_bomb(tmp_path) -> Path:
    """A .pb.gz file of 2 MiB of zeros (a few kB compressed)."""
    path = tmp_path / "bomb.pb.gz"
    with gzip.open(path, "wb") as f:
        for _ in range(32):
            f.write(b"\0" * 65536)
    return path
