"""Benchmark: the detector engine's wall time and peak memory, in one process and on Dask.

    .venv/bin/auditatlas --store /tmp/store1k demo --rooms 1000 --no-catchbench      # ~9k steps
    .venv/bin/auditatlas --store /tmp/store10k demo --rooms 10000 --no-catchbench    # ~90k steps
    .venv/bin/auditatlas --store /tmp/store100k demo --rooms 100000 --no-catchbench  # ~930k steps
    .venv/bin/python bench/detectors.py [--stores /tmp/store1k,/tmp/store10k,/tmp/store100k]
                                        [--detectors iforest,lof,logreg] [--panel-rooms 1500]
                                        [--out bench/out/detectors.json]

What is measured, each case in its own fresh process (so none profits from another's imports,
numba compilations or DuckDB buffers), on a scratch *copy* of each store (the stores named are
never written):

* ``score``: ``auditatlas.detectors.engine.score`` for one detector, one seed, the default
  feature set, on the whole simulated corpus: step features from DuckDB, the room-disjoint
  split, the fit, scoring every step, writing the prediction set. ``inprocess`` runs the jobs
  in the calling process; ``dask`` on a local cluster of 2 worker processes (the cluster's
  start-up is timed apart and not included). Peak memory is the highest summed resident size
  of the process and all its children (the Dask workers), sampled every 50 ms: shared pages
  count once per process, so it is an upper bound.
* ``panel``: ``run_standard_panel`` (every registry detector, 5 seeds) on a fresh store of
  ``--panel-rooms`` simulated rooms, in-process and on the local cluster: what the default
  store build pays.

The speed-up of the local cluster is the in-process wall time over the Dask wall time of the
same case, measured in the same run of this script. Not a test: figures depend on the machine
(2 cores here, shared), so they are reported, not asserted.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_STORES = ["/tmp/store1k", "/tmp/store10k", "/tmp/store100k"]
DEFAULT_DETECTORS = ["iforest", "lof", "logreg"]


class TreeMemory:
    """Peak summed RSS of this process and its descendants, sampled in a side thread."""

    def __init__(self, interval: float = 0.05) -> None:
        import psutil

        self.proc = psutil.Process()
        self.interval = interval
        self.peak = 0
        self.peak_main = 0
        self._stop = threading.Event()

    def _sample(self) -> None:
        import psutil

        while True:
            total = main = 0
            try:
                main = self.proc.memory_info().rss
                total = main
                for child in self.proc.children(recursive=True):
                    try:
                        total += child.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            self.peak, self.peak_main = max(self.peak, total), max(self.peak_main, main)
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> TreeMemory:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _child_score(store: str, detector: str, mode: str) -> dict:
    sys.path.insert(0, str(REPO))
    from auditatlas.cluster import client_session
    from auditatlas.commands.progress_bar import ProgressBar
    from auditatlas.detectors.engine import score

    bar = ProgressBar(sys.stderr)
    out: dict = {"store": store, "detector": detector, "mode": mode}
    cpu0 = time.process_time()  # this process only (not the Dask workers)
    with TreeMemory() as mem:
        if mode == "dask":
            t0 = time.perf_counter()
            with client_session(None, n_workers=2) as client:
                out["cluster_start_s"] = round(time.perf_counter() - t0, 2)
                t0 = time.perf_counter()
                result = score(store, [detector], {"corpus": ["maadbench-sim"]}, 1, client=client, progress=bar)
                out["wall_s"] = round(time.perf_counter() - t0, 2)
        else:
            t0 = time.perf_counter()
            result = score(store, [detector], {"corpus": ["maadbench-sim"]}, 1, progress=bar)
            out["wall_s"] = round(time.perf_counter() - t0, 2)
    s = result.sets[0]
    out.update({"steps": s.n_steps, "fit_s": round(s.fit_seconds, 2), "score_s": round(s.score_seconds, 2),
                "fit_cpu_s": round(s.fit_cpu_seconds, 2), "score_cpu_s": round(s.score_cpu_seconds, 2),
                "stages_s": result.stages, "cpu_s": round(time.process_time() - cpu0, 2),
                "job_peak_mb": round(s.peak_memory_mb), "test_roc_auc": round(s.test_roc_auc, 3),
                "peak_tree_rss_mb": round(mem.peak / 2**20), "peak_main_rss_mb": round(mem.peak_main / 2**20)})
    return out


def _child_panel(store: str, mode: str) -> dict:
    sys.path.insert(0, str(REPO))
    from auditatlas.cluster import client_session
    from auditatlas.detectors.panel import run_standard_panel

    out: dict = {"store": store, "mode": mode}
    with TreeMemory() as mem:
        if mode == "dask":
            t0 = time.perf_counter()
            with client_session(None, n_workers=2) as client:
                out["cluster_start_s"] = round(time.perf_counter() - t0, 2)
                t0 = time.perf_counter()
                result = run_standard_panel(store, client=client)
                out["wall_s"] = round(time.perf_counter() - t0, 2)
        else:
            t0 = time.perf_counter()
            result = run_standard_panel(store)
            out["wall_s"] = round(time.perf_counter() - t0, 2)
    out.update({"sets": len(result.sets), "steps": result.sets[0].n_steps if result.sets else 0,
                "stages_s": result.stages, "peak_tree_rss_mb": round(mem.peak / 2**20),
                "job_cpu_s": round(sum(s.fit_cpu_seconds + s.score_cpu_seconds for s in result.sets), 2)})
    return out


def _in_child(*args: str) -> dict:
    cmd = [sys.executable, __file__, "--child", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{done.stderr[-3000:]}")
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["progress_lines"] = len(progress)
    return result


def _copy(store: str, scratch: Path) -> str:
    target = scratch / Path(store).name
    if not target.exists():
        shutil.copytree(store, target, ignore=shutil.ignore_patterns(".lock*", ".staging-*", ".tmp-*"))
    return str(target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", default=",".join(DEFAULT_STORES))
    parser.add_argument("--detectors", default=",".join(DEFAULT_DETECTORS))
    parser.add_argument("--modes", default="inprocess,dask")
    parser.add_argument("--panel-rooms", type=int, default=1500, help="0 skips the standard panel")
    parser.add_argument("--out", default=str(REPO / "bench" / "out" / "detectors.json"))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        result = _child_score(*rest) if kind == "score" else _child_panel(*rest)
        print(json.dumps(result))
        return 0

    modes = args.modes.split(",")
    rows: list[dict] = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-detectors-"))
    try:
        for store in [s for s in args.stores.split(",") if s]:
            if not (Path(store) / "MANIFEST.json").exists():
                print(f"skip {store}: no store there (build it with `auditatlas --store {store} demo ...`)", file=sys.stderr)
                continue
            copy = _copy(store, scratch)
            for detector in args.detectors.split(","):
                for mode in modes:
                    row = _in_child("score", copy, detector, mode)
                    row["store"] = store
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        if args.panel_rooms:
            panel_store = scratch / f"panel-{args.panel_rooms}"
            subprocess.run([str(Path(sys.executable).parent / "auditatlas"), "--store", str(panel_store), "demo",
                            "--rooms", str(args.panel_rooms), "--no-catchbench"], check=True, capture_output=True, cwd=REPO)
            for mode in modes:
                row = _in_child("panel", str(panel_store), mode)
                row.update({"store": f"{args.panel_rooms} simulated rooms", "kind": "standard panel"})
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    for row in rows:
        if row.get("mode") == "dask":
            twin = next((r for r in rows if r.get("mode") == "inprocess" and r.get("store") == row.get("store")
                         and r.get("detector") == row.get("detector")), None)
            if twin:
                row["speedup_vs_inprocess"] = round(twin["wall_s"] / row["wall_s"], 2)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2))
    print(f"\n{'store':<22}{'detector':<10}{'mode':<10}{'steps':>9}{'wall s':>8}{'feat s':>7}{'jobs s':>7}"
          f"{'write s':>8}{'fit cpu':>8}{'score cpu':>10}{'peak MB':>9}{'speed-up':>9}")
    for r in rows:
        st = r.get("stages_s", {})
        print(f"{Path(str(r['store'])).name:<22}{r.get('detector', 'panel'):<10}{r['mode']:<10}{r.get('steps', 0):>9,}"
              f"{r['wall_s']:>8.1f}{st.get('features', 0):>7.1f}{st.get('jobs', 0):>7.1f}{st.get('write', 0):>8.1f}"
              f"{r.get('fit_cpu_s', 0):>8.1f}{r.get('score_cpu_s', 0):>10.1f}{r['peak_tree_rss_mb']:>9,}"
              f"{r.get('speedup_vs_inprocess', ''):>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
