"""LLM judges: calls per second and the judge's own cost per call against the scripted server
(tests/judge_server.py) replying after 200 ms, at 1, 8 and 32 connections; and resident memory
while judging 10,000 runs.

    .venv/bin/python bench/judges.py [--out DIR] [--runs 10000] [--seconds 10]

A synthetic store (``synth``: 5 steps per run, short text) is written under ``--out``. Each
throughput measurement judges ``connections x 5 x seconds`` runs with ``all-at-once`` through the
real path (template, official client, reply cache, set written), from an empty cache, and
reports calls/s against the ideal ``connections x 5`` (one call per 200 ms per connection), the
wall time the judge adds per call beyond the server's 200 ms at that concurrency, and its CPU
time per call (this process: rendering, client, parsing, cache commit). The memory run judges
every run of the store with replies at once (``fixed-0``, 32 connections) and samples this
process's resident memory at each tenth of the runs. Not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def synthetic_store(root: Path, n: int) -> None:
    from auditatlas.store import write_source

    runs = [{"run_id": f"synth:{i:06d}", "corpus": "synth", "source_file": f"{i}.json", "outcome": "failure",
             "n_steps": 5, "task_id": f"task {i}", "label_process": "synthetic"} for i in range(n)]
    steps = [{"run_id": f"synth:{i:06d}", "corpus": "synth", "step_idx": j, "step_id": str(j), "agent": "ab"[j % 2],
              "action": "say", "scope": f"synth:{i:06d}", "text_out": f"step {j} of run {i}: " + "lorem ipsum " * 20,
              "label": int(j == 2), "label_source": "synthetic"} for i in range(n) for j in range(5)]
    corpora = [{"corpus": "synth", "title": "synthetic", "kind": "simulated", "label_process": "synthetic",
                "description": "bench/judges.py"}]
    write_source(root, "synth", {"runs": runs, "steps": steps, "corpora": corpora})


def server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "judge_server.py")], stdout=subprocess.PIPE,
                            text=True)
    port = int(proc.stdout.readline().split()[1])
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=2).read()
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}/v1"


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/bench-judges")
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    os.environ.setdefault("AUDITATLAS_KEEP_BOARDS", "0")
    from auditatlas.judges.engine import JudgeConfig, judge

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    root = out / "store"
    synthetic_store(root, args.runs)
    proc, url = server()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    try:
        for conns in (1, 8, 32):
            n = int(conns * 5 * args.seconds)
            shutil.rmtree(root / "judge-cache", ignore_errors=True)
            config = JudgeConfig("all_at_once", "fixed-200", url, max_connections=conns, max_calls=n)
            cpu0, t0 = time.process_time(), time.perf_counter()
            result = judge(root, config, {"corpus": ["synth"]})
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            calls = result.meter.new_calls
            calling = result.meter.calling_seconds()
            rate, ideal = calls / calling, conns * 5
            lat = result.meter.latency()
            print(f"connections {conns:>2}: {calls} calls in {calling:.2f} s of calling = {rate:.1f} calls/s "
                  f"(ideal {ideal}, {rate / ideal:.1%}); overhead per call {1000 * (calling * conns / calls - 0.2):.1f} "
                  f"ms wall, {1000 * cpu / calls:.2f} ms CPU (whole command {wall:.1f} s: reading the slice and "
                  f"writing the set included); call latency p50 {lat['p50_s']} s, p95 {lat['p95_s']} s; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)

        shutil.rmtree(root / "judge-cache", ignore_errors=True)
        marks: list[tuple[int, float]] = []
        last = [-1]

        def progress(fraction: float, message: str) -> None:
            tenth = int(fraction * 10)
            if tenth > last[0]:
                last[0] = tenth
                marks.append((tenth, rss_mb()))

        base = rss_mb()
        t0 = time.perf_counter()
        result = judge(root, JudgeConfig("all_at_once", "fixed-0", url, max_connections=32), {"corpus": ["synth"]},
                       progress=progress)
        wall = time.perf_counter() - t0
        print(f"memory over {result.runs:,} runs ({result.meter.new_calls:,} calls, {wall:.1f} s, "
              f"{result.meter.new_calls / wall:.0f} calls/s): RSS before {base:.0f} MB; at each tenth "
              + ", ".join(f"{t * 10}% {mb:.0f}" for t, mb in marks) + f" MB; load {os.getloadavg()[0]:.2f}",
              flush=True)
    finally:
        proc.kill()


if __name__ == "__main__":
    main()
