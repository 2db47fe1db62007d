"""OTLP file ingest at scale: `auditatlas ingest otlp` on N spans of protobuf files, spans/s and peak memory.

    .venv/bin/python bench/otlp_ingest.py [--spans 100000] [--per-trace 20] [--per-file 500] [--json]

Writes ``--spans`` spans as OTLP protobuf files (``.pb``, one ``ExportTraceServiceRequest`` of
about ``--per-file`` spans each, whole traces per file, as a collector's batches usually are;
``--json`` writes OTLP/JSONL instead), in traces of ``--per-trace`` spans in the OpenInference
conventions (an agent span with LLM and tool children: model, token counts, a few hundred bytes
of text per span, a resource with ``service.name``). Then runs ``auditatlas ingest otlp`` on the
folder as a user would (the CLI in its own process, a fresh store, start-up included) and samples
the RSS of its whole process tree every 0.1 s.

Figures: spans/s, the process tree's peak RSS (and the CLI process's own VmHWM), spans in the
store, the 1-minute load before and after. Not a test: nothing is asserted. Prints the figures
and writes ``bench/out/otlp_ingest-<spans>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
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


class TreeRss(threading.Thread):
    """The summed RSS of a process and its descendants every 0.1 s (workers included)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(pid)
        self.peak, self.own_hwm_kb, self.stop = 0, 0, threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.wait(0.1):
            try:
                procs = [self.root] + self.root.children(recursive=True)
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
                for line in Path(f"/proc/{self.root.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.own_hwm_kb = max(self.own_hwm_kb, int(line.split()[1]))
            except (psutil.Error, OSError):
                return


def _kv(key: str, value):
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _trace(rng: random.Random, n: int, t0: int) -> list:
    """One trace: an agent root, then LLM and tool spans under it (every third a tool)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    trace_id = rng.randbytes(16)
    root_id = rng.randbytes(8)
    root = Span(trace_id=trace_id, span_id=root_id, name="planner", kind=Span.SPAN_KIND_INTERNAL,
                start_time_unix_nano=t0, end_time_unix_nano=t0 + n * 1_000_000,
                status=Status(code=Status.STATUS_CODE_OK),
                attributes=[_kv("openinference.span.kind", "AGENT"), _kv("agent.name", "planner"),
                            _kv("input.value", TEXT), _kv("session.id", f"s{rng.randrange(10**9)}")])
    spans = [root]
    for i in range(n - 1):
        start = t0 + (i + 1) * 900_000
        if i % 3 == 2:
            attrs = [_kv("openinference.span.kind", "TOOL"), _kv("tool.name", "search"),
                     _kv("input.value", '{"query": "flights to Lisbon"}'), _kv("output.value", TEXT)]
        else:
            attrs = [_kv("openinference.span.kind", "LLM"), _kv("llm.model_name", "gpt-4o"),
                     _kv("output.value", TEXT), _kv("llm.token_count.prompt", 120 + i),
                     _kv("llm.token_count.completion", 30)]
        spans.append(Span(trace_id=trace_id, span_id=rng.randbytes(8), parent_span_id=root_id, name=f"step {i}",
                          kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=start,
                          end_time_unix_nano=start + 800_000, attributes=attrs))
    return spans


def write_files(folder: Path, n_spans: int, per_trace: int, per_file: int, as_json: bool, seed: int = 0) -> int:
    """``n_spans`` spans as OTLP files under ``folder``; returns the number of files."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    rng = random.Random(seed)
    folder.mkdir(parents=True)
    made = files = 0
    t0 = 1_764_000_000_000_000_000
    while made < n_spans:
        spans = []
        while len(spans) < per_file and made < n_spans:
            n = min(per_trace, n_spans - made)
            spans.extend(_trace(rng, n, t0 + made * 1_000_000))
            made += n
        request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
            resource=Resource(attributes=[_kv("service.name", "bench-agents")]),
            scope_spans=[ScopeSpans(scope=InstrumentationScope(name="openinference.bench", version="1.0"),
                                    spans=spans)])])
        if as_json:
            line = MessageToJson(request, indent=None)
            (folder / f"batch-{files:06d}.jsonl").write_text(line + "\n")
        else:
            (folder / f"batch-{files:06d}.pb").write_bytes(request.SerializeToString())
        files += 1
    return files


def _stored_spans(store: Path, corpus: str) -> int:
    import duckdb

    from auditatlas.store import table_files

    files = table_files(store, "steps")
    if not files:
        return 0
    return duckdb.connect().execute("SELECT count(*) FROM read_parquet($1) WHERE corpus = $2",
                                    [files, corpus]).fetchone()[0]


def ingest(folder: Path, store: Path) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(store), "ingest", "otlp",
                             str(folder), "--corpus", "bench"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    rss = TreeRss(proc.pid)
    rss.start()
    out, err = proc.communicate(timeout=7200)
    seconds = time.perf_counter() - t0
    rss.stop.set()
    rss.join(2)
    return {"seconds": round(seconds, 2), "exit": proc.returncode,
            "tree_peak_rss_mb": round(rss.peak / 2**20, 1), "cli_vmhwm_mb": round(rss.own_hwm_kb / 1024, 1),
            "stdout_tail": out.strip().splitlines()[-3:], "stderr_tail": err.strip().splitlines()[-3:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--per-trace", type=int, default=20)
    parser.add_argument("--per-file", type=int, default=500)
    parser.add_argument("--json", action="store_true", help="OTLP/JSONL files instead of protobuf")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one, removed after)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or REPO / "bench" / "out" / f"otlp_ingest-{args.spans}{'-json' if args.json else ''}.json"
    with tempfile.TemporaryDirectory(prefix="bench-otlp-", dir=args.work) as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        files = write_files(work / "files", args.spans, args.per_trace, args.per_file, args.json)
        gen_s = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (work / "files").iterdir())
        load_before = os.getloadavg()
        run = ingest(work / "files", work / "store")
        load_after = os.getloadavg()
        stored = _stored_spans(work / "store", "bench")
    result = {"spans": args.spans, "per_trace": args.per_trace, "files": files, "encoding": "jsonl" if args.json else "pb",
              "input_mb": round(size / 2**20, 1), "generate_s": round(gen_s, 1), **run,
              "spans_per_s": round(args.spans / run["seconds"]), "spans_in_store": stored,
              "load_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)], "cores": os.cpu_count()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
