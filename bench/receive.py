"""Receiver throughput: the real OTLP/HTTP exporter into `auditatlas receive`, beside the file ingest.

    .venv/bin/python bench/receive.py [--spans 40000] [--per-trace 20] [--max-spans 10000] [--idle 1] [--journal both]
    .venv/bin/python bench/receive.py --steady 180 --rate 1000   # resident memory under a steady load

Starts ``auditatlas receive`` as a user runs it (its own process, a fresh store), and sends
``--spans`` spans (traces of ``--per-trace`` spans in the OpenInference conventions, an agent
with LLM and tool children, text attributes of a few hundred bytes) from this process through
the real SDK: ``TracerProvider`` + ``BatchSpanProcessor`` + ``OTLPSpanExporter`` (protobuf).
``--max-spans`` below ``--spans`` makes the receiver's memory bound do work: it must write
while spans still arrive, and refuse (503 + Retry-After) what it has no room for.

Figures:

- send: spans/s the exporter got answered 200 (the SDK's own span creation included), and the
  export calls' latency (p50, p99 ms: one call is one request, its 503 retries included);
- with the journal (a 200 only once the request is fsync-ed, the receiver's only mode) and,
  as the reference, without it (``--no-journal``, a flag kept for this comparison only): the
  same spans, one receiver after the other (``--journal both``), and the journal's commits
  (fsyncs) against the requests answered;
- sustained: spans/s from the first span made to the last one written to the store (SIGTERM
  after the last export, so the rate includes the final write);
- the receiver's peak RSS (VmHWM), its writes, the 503s it answered, spans in the store;
- the reference, in the same run: ``auditatlas ingest otlp`` of the same spans written as
  protobuf files (one per exporter-sized batch), spans/s and its peak RSS;
- the Explorer's per-run fetch (its run, steps and edges queries) on ``--fetch-runs`` random
  runs of each store, median and 90th percentile ms, warm: the received store keeps its rows in
  sorted segments (auditatlas/store_segments.py), the file ingest in one run order; and the
  segments the received store holds.

``--journal-only N``: instead, the journal alone (``auditatlas/ingest/receiver/journal.py``) in
this process: N commits of a body the size of an exporter's 512-span request, one thread, then
four threads at once (group commit: commits against records), ms per commit p50/p99.

``--steady SECONDS``: instead, one receiver (journal on, the default ``--max-spans``) under a
steady ``--rate`` spans/s for that long; its resident memory every 10 s, to show where it stops.

Not a test: nothing is asserted. Prints the figures and writes ``bench/out/receive.json``
(``receive_steady.json`` for ``--steady``).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEXT = "The planner reads the task and decides which tool to call next; " * 5


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


class RssSampler(threading.Thread):
    """The receiver's resident memory every 0.1 s, and its high-water mark from the kernel."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kb, self.stop = pid, 0, threading.Event()
        self.samples: list[tuple[float, int]] = []  # (perf_counter, VmRSS kB)

    def run(self) -> None:
        while not self.stop.wait(0.1):
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                elif line.startswith("VmRSS:"):
                    self.samples.append((time.perf_counter(), int(line.split()[1])))

    def peak_between(self, t0: float, t1: float) -> float:
        """Peak resident MB sampled between two times."""
        return round(max((kb for t, kb in self.samples if t0 <= t <= t1), default=0) / 1024, 1)


def make_spans(provider, n_spans: int, per_trace: int) -> int:
    from opentelemetry.trace import SpanKind

    tracer = provider.get_tracer("bench-agents", "1.0")
    made = 0
    while made < n_spans:
        with tracer.start_as_current_span("planner", attributes={
                "openinference.span.kind": "AGENT", "agent.name": "planner", "input.value": TEXT}):
            for i in range(per_trace - 1):
                kind = "TOOL" if i % 3 == 2 else "LLM"
                attrs = ({"openinference.span.kind": "TOOL", "tool.name": "search", "output.value": TEXT}
                         if kind == "TOOL" else
                         {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "output.value": TEXT,
                          "llm.token_count.prompt": 120 + i, "llm.token_count.completion": 30})
                with tracer.start_as_current_span(f"step {i}", kind=SpanKind.CLIENT, attributes=attrs):
                    pass
        made += per_trace
    return made


class CountingExporter:
    """The real exporter, counting what was answered 200 (and keeping the spans for the file)."""

    def __init__(self, endpoint: str, keep: list) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self.inner = OTLPSpanExporter(endpoint=endpoint, timeout=60)
        self.keep, self.ok, self.failed = keep, 0, 0
        self.latencies: list[float] = []  # seconds per export call

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        t0 = time.perf_counter()
        result = self.inner.export(spans)
        self.latencies.append(time.perf_counter() - t0)
        if result == SpanExportResult.SUCCESS:
            self.ok += len(spans)
            self.keep.append(list(spans))
        else:
            self.failed += len(spans)
        return result

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else 0.0


def receive(args: argparse.Namespace, work: Path, journal: bool = True) -> tuple[dict, list]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    store = work / ("received" if journal else "received-no-journal")
    proc = subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(store), "receive", "--corpus",
                             "bench", "--port", "0", "--idle", str(args.idle), "--max-spans", str(args.max_spans),
                             *([] if journal else ["--no-journal"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    first = proc.stdout.readline()
    endpoint = first.split(" on ", 1)[1].split()[0]
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    rss = RssSampler(proc.pid)
    rss.start()
    batches: list = []
    exporter = CountingExporter(endpoint, batches)
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=args.spans + 1,
                                                   max_export_batch_size=512, schedule_delay_millis=200))
    t0 = time.perf_counter()
    made = make_spans(provider, args.spans, args.per_trace)
    provider.force_flush(timeout_millis=600_000)  # everything queued exported (refused batches retried)
    sent_s = time.perf_counter() - t0
    provider.shutdown()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    total_s = time.perf_counter() - t0
    rss.stop.set()
    reader.join(5)
    lines += out.splitlines(keepends=True)  # what the reader thread had not taken
    writes = [ln for ln in lines if ln.startswith("wrote ")]
    stopped = next((ln.strip() for ln in lines if ln.startswith("stopped;")), "")
    refused = sum(ln.startswith("refused (503)") for ln in lines)
    stored = _stored_spans(store, "bench")
    return {
        "journal": journal, "load_1min_at_end": round(os.getloadavg()[0], 2),
        "spans_made": made, "spans_answered_200": exporter.ok, "spans_failed_export": exporter.failed,
        "send_s": round(sent_s, 2), "send_spans_per_s": round(exporter.ok / sent_s),
        "export_calls": len(exporter.latencies), "export_p50_ms": _percentile(exporter.latencies, 0.5),
        "export_p99_ms": _percentile(exporter.latencies, 0.99),
        "until_written_s": round(total_s, 2), "sustained_spans_per_s": round(stored / total_s),
        "spans_in_store": stored, "writes": len(writes), "answered_503": refused,
        "receiver_peak_rss_mb": round(rss.peak_kb / 1024, 1),
        # Bounded memory: the second half of the sending holds no more than the first half did.
        "receiver_peak_rss_mb_first_half": rss.peak_between(t0, t0 + sent_s / 2),
        "receiver_peak_rss_mb_second_half": rss.peak_between(t0 + sent_s / 2, t0 + sent_s),
        "max_spans": args.max_spans, "idle_s": args.idle, "stopped_line": stopped,
        "receiver_exit": proc.returncode, "stderr_tail": err.strip().splitlines()[-3:],
    }, batches


def _stored_spans(store: Path, corpus: str) -> int:
    import duckdb

    from auditatlas.store import table_files

    files = table_files(store, "steps")
    if not files:
        return 0
    return duckdb.connect().execute("SELECT count(*) FROM read_parquet($1) WHERE corpus = $2", [files, corpus]).fetchone()[0]


def file_ingest(batches: list, work: Path) -> dict:
    """The reference: the same spans as protobuf files (one per exported batch), `ingest otlp`."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    folder = work / "files"
    folder.mkdir()
    for i, batch in enumerate(batches):
        (folder / f"batch-{i:05d}.pb").write_bytes(encode_spans(batch).SerializeToString())
    n = sum(len(b) for b in batches)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(work / "ingested"), "ingest",
                             "otlp", str(folder), "--corpus", "bench"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    rss = RssSampler(proc.pid)
    rss.start()
    proc.communicate(timeout=600)
    seconds = time.perf_counter() - t0
    rss.stop.set()
    return {"spans": n, "files": len(batches), "seconds": round(seconds, 2), "spans_per_s": round(n / seconds),
            "peak_rss_mb": round(rss.peak_kb / 1024, 1), "exit": proc.returncode,
            "spans_in_store": _stored_spans(work / "ingested", "bench")}


def run_fetch(store: Path, n_runs: int, seed: int = 0) -> dict:
    """The Explorer's three per-run queries on ``n_runs`` random runs of ``store``: ms per run
    (median and 90th percentile, after one warm-up run), and the store's segments of steps."""
    import random
    import statistics

    import duckdb

    import queries
    from auditatlas.store import read_manifest, table_files

    run_ids = sorted(r for (r,) in duckdb.connect().execute("SELECT run_id FROM read_parquet($1)",
                                                            [table_files(store, "runs")]).fetchall())
    chosen = random.Random(seed).sample(run_ids, min(n_runs, len(run_ids)))
    query = queries.runner(store)

    def fetch(run_id: str) -> float:
        t0 = time.perf_counter()
        query("explorer_run", {"run": run_id, "labels": "released"})
        query("explorer_steps", {"run": run_id, "labels": "released"})
        query("explorer_edges", {"run": run_id})
        return (time.perf_counter() - t0) * 1000

    fetch(chosen[0])
    times = sorted(fetch(r) for r in chosen)
    entry = read_manifest(store)["sources"]["bench"]
    return {"runs": len(chosen), "median_ms": round(statistics.median(times), 1),
            "p90_ms": round(times[int(0.9 * (len(times) - 1))], 1),
            "steps_segments": entry.get("segments", {}).get("steps"),
            "steps_parts": len(list((store / entry["dir"] / "steps").glob("part-*.parquet")))}


def steady(args: argparse.Namespace, work: Path) -> dict:
    """One receiver under ``args.rate`` spans/s for ``args.steady`` seconds: its RSS every 10 s."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    store = work / "steady"
    command = [sys.executable, "-m", "auditatlas.cli", "--store", str(store), "receive", "--corpus", "bench",
               "--port", "0", "--idle", str(args.idle)]
    if args.steady_max_spans:
        command += ["--max-spans", str(args.steady_max_spans)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    endpoint = proc.stdout.readline().split(" on ", 1)[1].split()[0]
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    rss = RssSampler(proc.pid)
    rss.start()
    exporter = CountingExporter(endpoint, [])
    exporter.keep = _Discard()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=100_000, max_export_batch_size=512,
                                                   schedule_delay_millis=200))
    t0 = time.perf_counter()
    made, marks, loads = 0, [], []
    while (now := time.perf_counter() - t0) < args.steady:
        due = int(now * args.rate)
        if made < due:
            made += make_spans(provider, args.per_trace, args.per_trace)
        else:
            time.sleep(0.01)
        if now >= 10 * (len(marks) + 1):
            kb = rss.samples[-1][1] if rss.samples else 0
            marks.append({"s": round(now), "rss_mb": round(kb / 1024, 1), "spans_made": made,
                          "spans_answered_200": exporter.ok})
            loads.append(os.getloadavg()[0])
    provider.force_flush(timeout_millis=600_000)
    provider.shutdown()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=300)
    rss.stop.set()
    return {"seconds": args.steady, "rate_asked": args.rate, "spans_made": made, "spans_answered_200": exporter.ok,
            "spans_in_store": _stored_spans(store, "bench"), "export_p50_ms": _percentile(exporter.latencies, 0.5),
            "export_p99_ms": _percentile(exporter.latencies, 0.99), "peak_rss_mb": round(rss.peak_kb / 1024, 1),
            "answered_503": sum(ln.startswith("refused (503)") for ln in lines),
            "writes": sum(ln.startswith("wrote ") for ln in lines), "every_10s": marks,
            "load_1min_min_max": [round(min(loads), 2), round(max(loads), 2)] if loads else None,
            "max_spans": args.steady_max_spans or "default", "receiver_exit": proc.returncode}


def journal_only(n: int, body_bytes: int, work: Path) -> dict:
    from auditatlas.ingest.receiver.journal import Journal

    body = os.urandom(body_bytes)  # incompressible, as a gzip body is
    out = {"records": n, "body_bytes": body_bytes}
    for threads in (1, 4):
        journal = Journal(work / f"journal-{threads}", "bench")
        times: list[float] = []

        def commit_many(k: int, journal: Journal = journal, times: list[float] = times) -> None:
            for _ in range(k):
                t0 = time.perf_counter()
                seq = journal.reserve()
                journal.enqueue(seq, "protobuf", "gzip", body)
                journal.wait(seq)
                times.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        workers = [threading.Thread(target=commit_many, args=(n // threads,)) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - t0
        out[f"threads_{threads}"] = {"commits": journal.commits, "records": journal.committed,
                                     "records_per_s": round(journal.committed / seconds),
                                     "p50_ms": _percentile(times, 0.5), "p99_ms": _percentile(times, 0.99)}
        journal.close()
    return out


class _Discard(list):
    def append(self, item) -> None:  # the steady run keeps no spans for a file ingest
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=40_000)
    parser.add_argument("--per-trace", type=int, default=20)
    parser.add_argument("--max-spans", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=1.0)
    parser.add_argument("--fetch-runs", type=int, default=100, help="runs whose Explorer fetch is timed per store")
    parser.add_argument("--journal", choices=("both", "on", "off"), default="both",
                        help="receive with the journal, without it (the reference), or both one after the other")
    parser.add_argument("--steady", type=float, default=0, metavar="SECONDS", help="a steady-load run instead")
    parser.add_argument("--rate", type=float, default=1000, help="spans/s of the steady run")
    parser.add_argument("--steady-max-spans", type=int, default=0, help="--max-spans of the steady run (0: default)")
    parser.add_argument("--journal-only", type=int, default=0, metavar="N", help="time the journal alone")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load_before = os.getloadavg()
    if args.journal_only:
        with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
            result = {"journal_only": journal_only(args.journal_only, 256 * 1024, Path(tmp)),
                      "load_average_1_5_15": {"before": [round(x, 2) for x in load_before],
                                              "after": [round(x, 2) for x in os.getloadavg()]},
                      "cores": os.cpu_count()}
        print(json.dumps(result, indent=2))
        out = args.out or REPO / "bench" / "out" / "receive_journal.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        return
    if args.steady:
        with tempfile.TemporaryDirectory(prefix="bench-receive-") as tmp:
            result = {"steady": steady(args, Path(tmp)), "cores": os.cpu_count(),
                      "load_average_1_5_15": {"before": [round(x, 2) for x in load_before],
                                              "after": [round(x, 2) for x in os.getloadavg()]}}
        out = args.out or REPO / "bench" / "out" / "receive_steady.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return
    with tempfile.TemporaryDirectory(prefix="bench-receive-") as tmp:
        work = Path(tmp)
        received, batches = receive(args, work, journal=args.journal != "off")
        without = receive(args, work, journal=False)[0] if args.journal == "both" else None
        reference = file_ingest(batches, work)
        fetch = {"received": run_fetch(work / ("received" if args.journal != "off" else "received-no-journal"),
                                       args.fetch_runs),
                 "file_ingest": run_fetch(work / "ingested", args.fetch_runs)}
    result = {"receiver": received, "receiver_without_journal": without, "file_ingest": reference,
              "explorer_fetch": fetch,
              "load_average_1_5_15": {"before": [round(x, 2) for x in load_before],
                                      "after": [round(x, 2) for x in os.getloadavg()]},
              "cores": os.cpu_count()}
    out = args.out or REPO / "bench" / "out" / "receive.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
