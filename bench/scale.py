"""Scale benchmark: streaming ingest (one process vs a local Dask cluster) and the page queries
through the app's query layer beside the same answers written by hand in DuckDB and in naive
pandas, on one store, in one process (so the ratios hold on a shared machine).

    .venv/bin/python bench/scale.py ingest --rooms 100000 [--workers 0 2] [--files] [--out DIR]
    .venv/bin/python bench/scale.py queries --store STORE [--pandas] [--out DIR]
    .venv/bin/python bench/scale.py demo --rooms 1000000 --store /tmp/store1m [--workers N]

``ingest`` builds the simulated corpus into a fresh store (``--files``: first writes the JSON
files and ingests the folder, the path a real release takes) and reports steps/s and the peak
resident memory of the whole process tree (this process plus every worker), sampled every
0.2 s. ``queries`` times each query cold (first call) and warm (median of 5) three ways: the
app's named query (``queries.run``), a hand-written DuckDB query over the same Parquet files
(a fresh connection, no views), and pandas reading the needed columns then filtering and
grouping (``--pandas``; it loads the whole table, which is the point of the comparison).
Not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from timing import cold_warm  # noqa: E402 (bench/, the script's own folder)

WARM = 5
SLICE = {"backbone": ["GPT-4.1"], "difficulty": ["hard"]}


class TreePeak:
    """Peak RSS of this process and all its descendants, sampled in a thread."""

    def __init__(self, every: float = 0.2) -> None:
        import psutil

        self.proc = psutil.Process()
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except Exception:  # noqa: BLE001 - a worker may exit between listing and reading
                pass
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.every)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return self.peak / 2**20


def machine() -> dict:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
            "platform": platform.platform()}


# ============================================================================================ ingest

def bench_ingest(rooms: int, workers_list: list[int], files: bool, out: Path) -> list[dict]:
    from auditatlas import simulator
    from auditatlas.ingest import ingest, simulated
    from auditatlas.ingest.stream import run_plan

    results = []
    folder = None
    if files:
        folder = Path(tempfile.mkdtemp(prefix="bench-rooms-"))
        t0 = time.perf_counter()
        simulator.simulate(folder, rooms=rooms, seed=0)
        print(f"simulated {rooms:,} room files in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    try:
        for workers in workers_list:
            store = Path(tempfile.mkdtemp(prefix="bench-store-"))
            try:
                with TreePeak() as peak:
                    t0 = time.perf_counter()
                    if files:
                        batch, entry = ingest("maadbench", folder, store, workers=workers)
                        steps = entry["rows"]["steps"]
                    else:
                        outcome = run_plan(simulated.plan(rooms, 0), store, workers=workers)
                        steps = outcome.counters["steps"]
                    seconds = time.perf_counter() - t0
                row = {"rooms": rooms, "path": "files" if files else "simulated in memory", "workers": workers,
                       "steps": steps, "seconds": round(seconds, 1), "steps_per_s": round(steps / seconds),
                       "peak_tree_rss_mb": round(peak.peak_mb), "store_mb": round(_size_mb(store), 1),
                       "machine": machine()}
                print(json.dumps(row), file=sys.stderr)
                results.append(row)
            finally:
                shutil.rmtree(store, ignore_errors=True)
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"ingest-{rooms}{'-files' if files else ''}.json").write_text(json.dumps(results, indent=2))
    return results


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


# =========================================================================================== queries

def _files(store: Path, table: str) -> str:
    from auditatlas.store import table_files

    return "[" + ", ".join("'" + f + "'" for f in table_files(store, table)) + "]"


def hand_written(store: Path) -> dict[str, tuple[str, list]]:
    """The same answers written by hand over the same Parquet files (no views, no templates)."""
    steps, runs = _files(store, "steps"), _files(store, "runs")
    return {
        "action_rates": (f"""
            SELECT coalesce(backbone, '(none)') AS backbone, action, count(label) AS labeled_steps,
                   count(*) FILTER (WHERE label = 1) AS anomalies,
                   count(*) FILTER (WHERE label IS NULL) AS unlabeled_steps,
                   count(*) FILTER (WHERE label = 0) / nullif(count(label), 0) AS success_rate
            FROM read_parquet({steps}) GROUP BY ALL ORDER BY backbone, action""", []),
        "action_rates (sliced)": (f"""
            SELECT coalesce(backbone, '(none)') AS backbone, action, count(label) AS labeled_steps,
                   count(*) FILTER (WHERE label = 1) AS anomalies,
                   count(*) FILTER (WHERE label IS NULL) AS unlabeled_steps,
                   count(*) FILTER (WHERE label = 0) / nullif(count(label), 0) AS success_rate
            FROM read_parquet({steps}) WHERE backbone = 'GPT-4.1' AND difficulty = 'hard'
            GROUP BY ALL ORDER BY backbone, action""", []),
        "silent_failures": (f"""
            WITH a AS (
                SELECT coalesce(backbone, '(none)') AS backbone,
                       count(*) FILTER (WHERE NOT coalesce(is_format_error, false)) AS action_failures,
                       count(*) FILTER (WHERE NOT coalesce(is_format_error, false) AND scope_success) AS silent_action_failures,
                       count(*) FILTER (WHERE coalesce(is_format_error, false)) AS format_errors,
                       count(*) FILTER (WHERE coalesce(is_format_error, false) AND scope_success) AS silent_format_errors,
                       count(*) FILTER (WHERE scope_success IS NULL) AS anomalies_without_scope_outcome
                FROM read_parquet({steps}) WHERE label = 1 GROUP BY ALL),
            b AS (SELECT DISTINCT coalesce(backbone, '(none)') AS backbone FROM read_parquet({runs}))
            SELECT backbone, coalesce(a.action_failures, 0), coalesce(a.silent_action_failures, 0),
                   coalesce(a.format_errors, 0), coalesce(a.silent_format_errors, 0),
                   coalesce(a.anomalies_without_scope_outcome, 0)
            FROM b FULL JOIN a USING (backbone) ORDER BY backbone""", []),
        "slice_summary": (f"""
            WITH r AS (SELECT corpus, count(*) AS runs FROM read_parquet({runs}) GROUP BY corpus),
                 s AS (SELECT corpus, count(*) AS steps, count(label) AS labeled_steps,
                              count(*) FILTER (WHERE label = 1) AS anomalous_steps
                       FROM read_parquet({steps}) GROUP BY corpus)
            SELECT r.corpus, r.runs, s.steps, s.labeled_steps, s.anomalous_steps
            FROM r LEFT JOIN s USING (corpus) ORDER BY r.corpus""", []),
        "slice_options": (f"""
            WITH r AS (SELECT corpus, backbone, difficulty, temperature, domain, outcome FROM read_parquet({runs}))
            SELECT 'corpus' AS column_name, corpus AS value, count(*) AS runs FROM r GROUP BY ALL
            UNION ALL SELECT 'backbone', backbone, count(*) FROM r WHERE backbone IS NOT NULL GROUP BY ALL
            UNION ALL SELECT 'difficulty', difficulty, count(*) FROM r WHERE difficulty IS NOT NULL GROUP BY ALL
            UNION ALL SELECT 'temperature', CAST(temperature AS VARCHAR), count(*) FROM r WHERE temperature IS NOT NULL GROUP BY ALL
            UNION ALL SELECT 'domain', domain, count(*) FROM r WHERE domain IS NOT NULL GROUP BY ALL
            UNION ALL SELECT 'outcome', outcome, count(*) FROM r GROUP BY ALL
            ORDER BY column_name, value""", []),
        "one run's steps": (f"""SELECT * FROM read_parquet({steps}) WHERE run_id = $1 ORDER BY step_idx""", ["RUN"]),
        "one run's edges": (f"""SELECT * FROM read_parquet({_files(store, 'edges')}) WHERE run_id = $1
                               ORDER BY dst_idx, src_idx""", ["RUN"]),
    }


APP_QUERIES: dict[str, tuple[str, Callable[[str], dict]]] = {
    "action_rates": ("action_rates", lambda run: {"slice": {}}),
    "action_rates (sliced)": ("action_rates", lambda run: {"slice": SLICE}),
    "silent_failures": ("silent_failures", lambda run: {"slice": {}}),
    "slice_summary": ("slice_summary", lambda run: {"slice": {}}),
    "slice_options": ("slice_options", lambda run: {}),
}


def _frame(con, sql: str, params: list) -> Any:
    """One query's result as a frame (what a page pulls)."""
    return con.execute(sql, params).df()


def _time(fn: Callable[[], Any]) -> tuple[float, float]:
    _, cold, warm = cold_warm(fn, WARM)
    return cold, statistics.median(warm)


def pandas_versions(store: Path) -> dict[str, Callable[..., Any]]:
    """Naive pandas, as a notebook would do it: read the table, then filter and group."""
    import pandas as pd

    from auditatlas.store import table_files

    def table(name):
        return pd.concat([pd.read_parquet(f) for f in table_files(store, name)], ignore_index=True)

    def action_rates(sliced: bool):
        frame = table("steps")
        if sliced:
            frame = frame[(frame["backbone"] == "GPT-4.1") & (frame["difficulty"] == "hard")]
        return frame.groupby(["backbone", "action"])["label"].agg(["count", "sum"])

    def silent():
        frame = table("steps")
        frame = frame[frame["label"] == 1]
        return frame.groupby("backbone")[["is_format_error", "scope_success"]].sum()

    def summary():
        runs, steps = table("runs"), table("steps")
        return runs.groupby("corpus").size(), steps.groupby("corpus")["label"].agg(["size", "count", "sum"])

    def options():
        runs = table("runs")
        return {c: runs[c].value_counts() for c in ("corpus", "backbone", "difficulty", "temperature", "domain", "outcome")}

    def one_run(run_id):
        frame = table("steps")
        return frame[frame["run_id"] == run_id].sort_values("step_idx")

    return {"action_rates": lambda: action_rates(False), "action_rates (sliced)": lambda: action_rates(True),
            "silent_failures": silent, "slice_summary": summary, "slice_options": options,
            "one run's steps": one_run}


def bench_queries(store: Path, with_pandas: bool, out: Path) -> list[dict]:
    import duckdb

    import queries

    # The derived tables (queries/derived.py) are built once per store version, by the CLI
    # after a write or on first use; timed apart so "cold" below is a cache miss, not a build.
    t0 = time.perf_counter()
    queries.warm(store)
    print(json.dumps({"derived_tables_ready_s": round(time.perf_counter() - t0, 2)}), file=sys.stderr)
    con_app = queries.connect(store)
    run_id = con_app.execute("SELECT run_id FROM runs ORDER BY run_id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM runs)").fetchone()[0]
    n_runs = con_app.execute("SELECT count(*) FROM runs").fetchone()[0]
    raw = duckdb.connect()
    raw.execute("SET parquet_metadata_cache = true")
    rows = []
    pandas_fns = pandas_versions(store) if with_pandas else {}
    for name, (sql, params) in hand_written(store).items():
        bound = [run_id if p == "RUN" else p for p in params]
        raw_cold, raw_warm = _time(partial(_frame, raw, sql, bound))
        if name.startswith("one run's"):
            table, order = ("steps", "step_idx") if name.endswith("steps") else ("edges", "dst_idx, src_idx")
            sql_app = f"SELECT * FROM {table} WHERE run_id = $1 ORDER BY {order}"
            app = partial(_frame, queries.database.for_store(store).thread_cursor(), sql_app, [run_id])  # what queries.run uses
            app_name = f"{table} WHERE run_id = ? (app views)"
        else:
            qname, make = APP_QUERIES[name]
            app = partial(queries.run, qname, make(run_id), root=store)
            app_name = qname
        app_cold, app_warm = _time(app)
        row = {"query": name, "app": app_name, "runs": n_runs, "app_cold_ms": round(app_cold * 1000, 1),
               "app_warm_ms": round(app_warm * 1000, 1), "raw_cold_ms": round(raw_cold * 1000, 1),
               "raw_warm_ms": round(raw_warm * 1000, 1), "app_over_raw": round(app_warm / raw_warm, 2)}
        if name in pandas_fns:
            fn = pandas_fns[name]
            t0 = time.perf_counter()
            fn(run_id) if name == "one run's steps" else fn()
            row["pandas_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            row["pandas_over_app"] = round(row["pandas_ms"] / row["app_warm_ms"], 1)
        print(json.dumps(row), file=sys.stderr)
        rows.append(row)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"queries-{n_runs}.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    return rows


def bench_demo(rooms: int, store: Path, workers: int | None, out: Path) -> dict:
    """``auditatlas demo --rooms N`` as a user runs it, timed, with the process tree's peak RSS."""
    import subprocess

    import psutil

    if store.exists():
        shutil.rmtree(store)
    cmd = [sys.executable, "-m", "auditatlas.cli", "--store", str(store), "demo", "--rooms", str(rooms)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    root = psutil.Process(proc.pid)
    peak = peak_main = 0
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    while proc.poll() is None:
        total = 0
        for p in [root, *root.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except Exception:  # noqa: BLE001
                pass
        peak = max(peak, total)
        try:
            peak_main = max(peak_main, root.memory_info().rss)
        except Exception:  # noqa: BLE001 - it may have just exited
            pass
        time.sleep(0.2)
    reader.join(5)
    seconds = time.perf_counter() - t0
    row = {"rooms": rooms, "workers": workers, "exit": proc.returncode, "seconds": round(seconds, 1),
           "peak_tree_rss_mb": round(peak / 2**20),
           "peak_main_rss_mb": round(peak_main / 2**20), "store_mb": round(_size_mb(store), 1),
           "last_lines": [line.rstrip()[:300] for line in lines[-4:]], "machine": machine()}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"demo-{rooms}.json").write_text(json.dumps(row, indent=2))
    print(json.dumps(row, indent=2))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    ing = sub.add_parser("ingest")
    ing.add_argument("--rooms", type=int, default=100_000)
    ing.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    ing.add_argument("--files", action="store_true")
    ing.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "scale")
    dm = sub.add_parser("demo")
    dm.add_argument("--rooms", type=int, default=1_000_000)
    dm.add_argument("--store", type=Path, required=True)
    dm.add_argument("--workers", type=int)
    dm.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "scale")
    q = sub.add_parser("queries")
    q.add_argument("--store", type=Path, required=True)
    q.add_argument("--pandas", action="store_true")
    q.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "scale")
    args = parser.parse_args()
    if args.what == "ingest":
        bench_ingest(args.rooms, args.workers, args.files, args.out)
    elif args.what == "demo":
        bench_demo(args.rooms, args.store, args.workers, args.out)
    else:
        bench_queries(args.store, args.pandas, args.out)


if __name__ == "__main__":
    main()
