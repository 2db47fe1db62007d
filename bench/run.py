"""Benchmarks: ingest throughput and the Overview queries, on simulated stores of given sizes.

    .venv/bin/python bench/run.py --rooms 1500 100000 [--out bench/out]

For each size: simulate MAADBench-format JSON (timed apart), ingest it through the real
MAADBench adapter and store writer (steps/s), then time every Overview query (median of 5 warm
runs after one cold run) and the peak RSS of the process. Prints a Markdown table for
bench/README.md. Not a test: figures depend on the machine, so they are reported, not asserted.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

OVERVIEW_QUERIES = ["slice_options", "corpus_counts", "slice_summary", "action_rates", "silent_failures"]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_size(rooms: int, work: Path) -> dict:
    from auditatlas.ingest import Context
    from auditatlas.ingest import demo, maadbench
    from auditatlas.store import write_source
    import queries

    traces, store = work / f"traces-{rooms}", work / f"store-{rooms}"
    t0 = time.perf_counter()
    demo.simulate(traces, rooms=rooms, seed=0)
    t_sim = time.perf_counter() - t0

    t0 = time.perf_counter()
    batch = maadbench.read(traces, Context(store=store), corpus="maadbench-sim", kind="simulated", source="demo")
    t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    write_source(store, batch.source, batch.tables)
    t_write = time.perf_counter() - t0
    n_steps = len(batch.tables["steps"]) if isinstance(batch.tables["steps"], list) else batch.tables["steps"].num_rows
    del batch
    shutil.rmtree(traces, ignore_errors=True)

    timings = {}
    for name in OVERVIEW_QUERIES:
        params = {"slice": {}} if name in ("slice_summary", "action_rates", "silent_failures") else {}
        queries.run(name, params, root=store)  # cold
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            queries.run(name, params, root=store)
            runs.append(time.perf_counter() - t0)
        timings[name] = statistics.median(runs)
    sliced = {"slice": {"backbone": ["GPT-4.1"], "difficulty": ["hard"]}}
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        queries.run("action_rates", sliced, root=store)
        runs.append(time.perf_counter() - t0)
    timings["action_rates (sliced)"] = statistics.median(runs)
    store_mb = sum(p.stat().st_size for p in store.rglob("*.parquet")) / 2**20
    return {
        "rooms": rooms, "steps": n_steps, "simulate_s": t_sim, "ingest_read_s": t_read, "ingest_write_s": t_write,
        "ingest_steps_per_s": n_steps / (t_read + t_write), "store_mb": store_mb, "queries_s": timings,
        "peak_rss_mb": _peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rooms", type=int, nargs="+", default=[1500])
    parser.add_argument("--out", default=str(REPO / "bench" / "out"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rooms in args.rooms:
            res = bench_size(rooms, Path(tmp))
            results.append(res)
            print(json.dumps(res, indent=2), flush=True)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": __import__("os").cpu_count(),
               "platform": platform.platform()}
    (out / "results.json").write_text(json.dumps({"machine": machine, "results": results}, indent=2))
    print("\n| rooms | steps | simulate (s) | ingest (s) | ingest steps/s | store MB | " + " | ".join(results[0]["queries_s"]) + " |")
    print("|" + "---|" * (6 + len(results[0]["queries_s"])))
    for r in results:
        q = " | ".join(f"{v * 1000:.0f} ms" for v in r["queries_s"].values())
        print(f"| {r['rooms']:,} | {r['steps']:,} | {r['simulate_s']:.1f} | {r['ingest_read_s'] + r['ingest_write_s']:.1f} | "
              f"{r['ingest_steps_per_s']:,.0f} | {r['store_mb']:.1f} | {q} |")


if __name__ == "__main__":
    main()
