"""Benchmarks: ingest throughput and the Overview queries, on simulated stores of given sizes.

    .venv/bin/python bench/run.py [--rooms 1500 [100000 ...]] [--out bench/out] [--keep-store]
    .venv/bin/python bench/run.py --queries-on STORE [--out DIR]   # only the queries, on any store

For each size: simulate MAADBench-format JSON (timed apart), ingest it through the real
MAADBench adapter and store writer (steps/s), then time every query the Overview page and the
sidebar run: once cold (the first call in the process, after the views are opened) and the
median of 5 warm calls. Not a test: figures depend on the machine, so they are reported, not
asserted.

Each size runs in its own child process, because the kernel's peak-RSS counter
(``ru_maxrss``) is a process-lifetime maximum: measured in one process, a small size that
follows a large one would report the large one's peak. Within a size, each phase's own peak
is read from ``VmHWM`` after resetting it (Linux ``/proc/self/clear_refs``), so the table can
say which phase holds the memory. Writes ``results-<rooms>.json`` per size and
``results.json`` (all sizes of this invocation) under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# What the Overview page asks for (pages/overview.py) plus the sidebar's choices (app.py).
OVERVIEW_QUERIES = ["slice_options", "corpora", "corpus_counts", "slice_summary", "action_rates", "silent_failures"]
SLICED = {"backbone": ["GPT-4.1"], "difficulty": ["hard"]}
WARM_REPEATS = 5


def _peak_rss_mb() -> float:
    """Process-lifetime peak RSS (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_hwm() -> bool:
    """Reset the kernel's VmHWM so the next phase's peak is its own; False where unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _hwm_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _phase(peaks: dict[str, float | None], name: str, fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``fn``; record its own peak RSS under ``name``; return its result and wall seconds."""
    ok = _reset_hwm()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    peaks[name] = _hwm_mb() if ok else None
    return result, seconds


def _folder_mb(path: Path, pattern: str = "*") -> float:
    return sum(p.stat().st_size for p in path.rglob(pattern) if p.is_file()) / 2**20


def _params(name: str, slice_: dict | None = None) -> dict:
    return {"slice": slice_ or {}} if name in ("slice_summary", "action_rates", "silent_failures") else {}


def _time_query(name: str, params: dict, store: Path) -> tuple[float, float, int]:
    """(cold seconds, warm median seconds, rows) for one named query."""
    import queries

    t0 = time.perf_counter()
    frame = queries.run(name, params, root=store)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(WARM_REPEATS):
        t0 = time.perf_counter()
        queries.run(name, params, root=store)
        warm.append(time.perf_counter() - t0)
    return cold, statistics.median(warm), len(frame)


def time_queries(store: Path, peaks: dict[str, float | None]) -> dict:
    """Cold and warm timings of the Overview queries on ``store``, in this process."""
    import queries

    # Opening the in-memory database and its views happens once per process; timed apart so
    # "cold" below is the query itself (on files the OS has likely kept in its page cache).
    _, t_open = _phase(peaks, "open_views", lambda: queries.connect(store).close())
    cold: dict[str, float] = {}
    warm: dict[str, float] = {}
    rows: dict[str, int] = {}

    def run_queries() -> None:
        for name in OVERVIEW_QUERIES:
            cold[name], warm[name], rows[name] = _time_query(name, _params(name), store)
        key = "action_rates (sliced)"
        cold[key], warm[key], rows[key] = _time_query("action_rates", _params("action_rates", SLICED), store)

    _phase(peaks, "queries", run_queries)
    return {"open_views_s": t_open, "queries_cold_s": cold, "queries_warm_median_s": warm, "query_rows": rows}


def bench_size(rooms: int, work: Path, keep: Path | None = None) -> dict:
    """Every measurement for one size; meant to run alone in its process (see the module doc)."""
    from auditatlas.ingest import Context, demo, maadbench
    from auditatlas.store import write_source

    traces, store = work / f"traces-{rooms}", keep or work / f"store-{rooms}"
    shutil.rmtree(store, ignore_errors=True)
    peaks: dict[str, float | None] = {}
    baseline_mb = _peak_rss_mb()  # interpreter + imports, before any work
    load_before = os.getloadavg()  # other processes on the machine skew every figure below

    counts, t_sim = _phase(peaks, "simulate", lambda: demo.simulate(traces, rooms=rooms, seed=0))
    traces_mb = _folder_mb(traces, "*.json")
    batch, t_read = _phase(peaks, "read", lambda: maadbench.read(
        traces, Context(store=store), corpus="maadbench-sim", kind="simulated", source="demo"))
    _, t_write = _phase(peaks, "write", partial(write_source, store, batch.source, batch.tables))
    n_steps = batch.tables["steps"].num_rows
    n_runs = batch.tables["runs"].num_rows
    n_edges = batch.tables["edges"].num_rows
    del batch
    shutil.rmtree(traces, ignore_errors=True)

    query_figures = time_queries(store, peaks)
    return {
        "rooms": rooms, "runs": n_runs, "steps": n_steps, "edges": n_edges, "simulated_steps": counts["steps"],
        "traces_mb": traces_mb, "simulate_s": t_sim, "ingest_read_s": t_read, "ingest_write_s": t_write,
        "ingest_steps_per_s": n_steps / (t_read + t_write), "store_mb": _folder_mb(store, "*.parquet"),
        **query_figures,
        # clear_refs lowers ru_maxrss too (seen on this kernel), so the lifetime peak is the larger
        # of it and every phase's own peak.
        "load_avg_before": load_before, "baseline_rss_mb": baseline_mb, "phase_peak_rss_mb": peaks,
        "ru_maxrss_mb": _peak_rss_mb(),
        "peak_rss_mb": max([_peak_rss_mb(), baseline_mb, *(v for v in peaks.values() if v is not None)]),
    }


def machine() -> dict:
    import duckdb
    import pyarrow

    cpu = next((line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if line.startswith("model name")), None)
    mem = next((int(line.split()[1]) / 2**20 for line in _lines("/proc/meminfo") if line.startswith("MemTotal:")), None)
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpu_model": cpu, "cpus": os.cpu_count(),
        "memory_gib": round(mem, 1) if mem else None, "python": platform.python_version(),
        "duckdb": duckdb.__version__, "pyarrow": pyarrow.__version__, "platform": platform.platform(),
        "load_avg": os.getloadavg(),
    }


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _one(rooms: int, out: Path, keep_store: bool) -> None:
    """Child-process entry: measure one size and write its JSON."""
    with tempfile.TemporaryDirectory(prefix="auditatlas-bench-") as tmp:
        res = bench_size(rooms, Path(tmp), out / f"store-{rooms}" if keep_store else None)
    res["machine"] = machine()
    (out / f"results-{rooms}.json").write_text(json.dumps(res, indent=2))


def _table(results: list[dict]) -> str:
    names = list(results[0]["queries_warm_median_s"])
    head = ("| rooms | steps | simulate (s) | ingest (s) | ingest steps/s | store MB | "
            + " | ".join(f"{n} cold / warm (ms)" for n in names) + " | peak RSS MB |")
    lines = [head, "|" + "---|" * (7 + len(names))]
    for r in results:
        q = " | ".join(f"{r['queries_cold_s'][n] * 1000:.0f} / {r['queries_warm_median_s'][n] * 1000:.0f}" for n in names)
        lines.append(f"| {r['rooms']:,} | {r['steps']:,} | {r['simulate_s']:.1f} | "
                     f"{r['ingest_read_s'] + r['ingest_write_s']:.1f} | {r['ingest_steps_per_s']:,.0f} | "
                     f"{r['store_mb']:.1f} | {q} | {r['peak_rss_mb']:,.0f} |")
    lines += ["", "| rooms | " + " | ".join(f"peak RSS in {p} (MB)" for p in results[0]["phase_peak_rss_mb"]) + " |",
              "|" + "---|" * (1 + len(results[0]["phase_peak_rss_mb"]))]
    for r in results:
        cells = " | ".join("n/a" if v is None else f"{v:,.0f}" for v in r["phase_peak_rss_mb"].values())
        lines.append(f"| {r['rooms']:,} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, nargs="+", default=[1500])
    parser.add_argument("--out", default=str(REPO / "bench" / "out"))
    parser.add_argument("--keep-store", action="store_true",
                        help="leave each simulated store at OUT/store-<rooms> (for --queries-on)")
    parser.add_argument("--queries-on", metavar="STORE",
                        help="only time the Overview queries on an existing store, in a fresh process")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # child-process mode
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.one and args.queries_on:
        res = {"store": args.queries_on, "load_avg_before": os.getloadavg(), "phase_peak_rss_mb": {}}
        res.update(time_queries(Path(args.queries_on), res["phase_peak_rss_mb"]))
        res["machine"] = machine()
        (out / "results-queries.json").write_text(json.dumps(res, indent=2))
        return
    if args.one:
        _one(args.rooms[0], out, args.keep_store)
        return
    if args.queries_on:
        subprocess.run([sys.executable, __file__, "--one", "--queries-on", args.queries_on, "--out", str(out)], check=True)
        res = json.loads((out / "results-queries.json").read_text())
        print(json.dumps(res, indent=2))
        print("\n| query | rows | cold (ms) | warm median (ms) |\n|---|---|---|---|")
        for name, warm in res["queries_warm_median_s"].items():
            print(f"| {name} | {res['query_rows'][name]} | {res['queries_cold_s'][name] * 1000:.0f} | {warm * 1000:.0f} |")
        return
    results = []
    for rooms in args.rooms:
        print(f"benchmarking {rooms:,} rooms in a fresh process ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--one", "--rooms", str(rooms), "--out", str(out)]
        subprocess.run(cmd + (["--keep-store"] if args.keep_store else []), check=True)
        res = json.loads((out / f"results-{rooms}.json").read_text())
        results.append(res)
        print(json.dumps(res, indent=2), flush=True)
    (out / "results.json").write_text(json.dumps({"machine": machine(), "results": results}, indent=2))
    print("\n" + _table(results))


if __name__ == "__main__":
    main()
