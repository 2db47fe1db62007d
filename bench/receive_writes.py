"""Receiver writes one by one, in process: each write's seconds, rows written again and memory as
the corpus grows.

    .venv/bin/python bench/receive_writes.py [--spans 200000] [--per-write 5000] [--per-trace 20]

``bench/receive.py`` measures the receiver as a user runs it (the real exporter over HTTP, its
own process), where a write's cost shows only through the rates and the peak RSS. Here the same
spans (made by the real SDK, encoded as the OTLP/HTTP exporter encodes them) are handed to a
``Receiver`` in this process as its HTTP handler hands them over, ``--per-write`` spans at a
time, and every write is timed alone: so a write's cost can be read against the corpus's size.

Figures per write: seconds, the rows of earlier writes it wrote again (``Written.rewritten``:
segments merged, runs dropped from a part; absent before the segments existed), this process's
resident memory after it and its high-water mark. Summarized per fifth of the corpus. Not a
test: nothing is asserted. Writes ``bench/out/receive_writes.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from receive import make_spans  # bench/receive.py: the same spans the exporter sends there

REPO = Path(__file__).resolve().parents[1]


def requests(n_spans: int, per_write: int, per_trace: int) -> Iterator[bytes]:
    """``per_write`` spans at a time as one protobuf export request (whole traces)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    made = 0
    while made < n_spans:
        made += make_spans(provider, min(per_write, n_spans - made), per_trace)
        yield encode_spans(kept.get_finished_spans()).SerializeToString()
        kept.clear()


def memory_mb() -> tuple[float, float]:
    """This process's resident memory now and its high-water mark, MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return tuple(round(int(fields[k].split()[0]) / 1024, 1) for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def run(args: argparse.Namespace, store: Path) -> list[dict]:
    from auditatlas.ingest.otlp_spans import decode_body
    from auditatlas.ingest.receiver import Settings
    from auditatlas.ingest.receiver.service import Receiver

    receiver = Receiver(store, "bench", Settings(idle_s=0.0, max_spans=2 * args.per_write), say=lambda line: None)
    writes, held = [], 0
    for i, raw in enumerate(requests(args.spans, args.per_write, args.per_trace)):
        accepted = receiver.accept(decode_body(raw, "protobuf", f"write {i}"), raw, "protobuf")
        t0 = time.perf_counter()
        written = receiver.flush(force=True)
        seconds = time.perf_counter() - t0
        held += accepted.kept
        rss, hwm = memory_mb()
        writes.append({"write": i + 1, "spans_held": held, "seconds": round(seconds, 3),
                       "rewritten": getattr(written, "rewritten", None), "rss_mb": rss, "hwm_mb": hwm})
    return writes


def summary(writes: list[dict], parts: int = 5) -> list[dict]:
    """Per fifth of the writes: the corpus at its end, median and slowest write, rows written again."""
    size = max(1, len(writes) // parts)
    out = []
    for lo in range(0, len(writes), size):
        chunk = writes[lo:lo + size]
        rewritten = [w["rewritten"] for w in chunk if w["rewritten"] is not None]
        out.append({"writes": f"{chunk[0]['write']}-{chunk[-1]['write']}", "spans_held_at_end": chunk[-1]["spans_held"],
                    "median_write_s": round(statistics.median(w["seconds"] for w in chunk), 2),
                    "slowest_write_s": round(max(w["seconds"] for w in chunk), 2),
                    "rows_rewritten": sum(rewritten) if rewritten else None,
                    "rss_mb_max": max(w["rss_mb"] for w in chunk), "hwm_mb_at_end": chunk[-1]["hwm_mb"]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--per-write", type=int, default=5_000)
    parser.add_argument("--per-trace", type=int, default=20)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "receive_writes.json")
    args = parser.parse_args()
    import auditatlas

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-receive-writes-") as tmp:
        writes = run(args, Path(tmp) / "store")
    result = {"code": str(Path(auditatlas.__file__).parent), "spans": args.spans, "per_write": args.per_write,
              "summary": summary(writes), "writes": writes,
              "load_average_1_5_15": {"before": [round(x, 2) for x in load_before],
                                      "after": [round(x, 2) for x in os.getloadavg()]},
              "cores": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "writes"}, indent=2))


if __name__ == "__main__":
    main()
