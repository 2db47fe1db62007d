"""Benchmark: the Propagation page's queries on a large store (default: /tmp/store100k, the
100,000-room simulated corpus).

    .venv/bin/auditatlas --store /tmp/store100k demo --rooms 100000 --no-catchbench   # once; minutes
    .venv/bin/python bench/propagation.py [--store /tmp/store100k] [--sets 3] [--repeat 5] [--out FILE]

Timed in one process through the same query functions the page runs
(``auditatlas.analyses.anomaly_propagation``, here over ``queries.runner``), each with its pandas
post-processing:

* ``page header``: what every tab runs first (step counts per corpus and chain counts; the
  step counts are shared with the heatmap through the app's cache);
* ``heatmap``: the slice's source counts and numerators, turned into the cell table (the
  store-wide *possible pairs* are slice-independent; the app caches them per store version,
  so they are timed apart as ``possible pairs``);
* ``cell chains``: page 1 of the chains behind one cell (GPT-4.1, SOLVE_CLUE -> APPLY_DELTA);
* ``chain list``: page 1 of the chain browser, unfiltered and filtered (origin SOLVE_CLUE,
  length 3-4, page 20);
* ``role recall``: own labels and a top-10% cut over every step-level prediction set.

Each is timed cold (first call in this process) and warm (median of ``--repeat`` further calls),
on the whole store and on a slice (GPT-4.1, hard). A reference query, the per-(backbone,
action) counts over every step that the Overview runs, is timed the same way so the figures
can be read as ratios on a shared machine, and the warm CPU time of the process is printed
beside the wall time (it does not grow with the machine's load).

The original store is never written: when it holds no step-level prediction set about its
corpus, the benchmark copies it to a temporary folder and adds ``--sets`` synthetic sets
(seeded scores over every step, one method per set), then removes the copy.
Not a test: figures depend on the machine, so they are reported, not asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import queries  # noqa: E402
from auditatlas.analyses import anomaly_propagation as P  # noqa: E402

SLICES = {"all": {}, "GPT-4.1 hard": {"backbone": ["GPT-4.1"], "difficulty": ["hard"]}}
TARGET_MS = 300


def _has_step_sets(root: Path) -> bool:
    sets = P.step_sets(queries.runner(root), {})
    return not sets.empty


def _with_synthetic_sets(root: Path, n_sets: int) -> Path:
    """A copy of ``root`` with ``n_sets`` step-level prediction sets over every step."""
    from auditatlas.store import write_source

    copy = Path(tempfile.mkdtemp(prefix="auditatlas-bench-propagation-"))
    shutil.copytree(root, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".lock", ".lock-holder"))
    steps = queries.connect(copy).sql(
        "SELECT corpus, run_id, step_idx, coalesce(label, 0) AS label FROM steps").to_arrow_table()
    label = steps.column("label").to_numpy(zero_copy_only=False).astype(float)
    corpus = steps.column("corpus")[0].as_py()
    sets, parts = [], []
    for k in range(n_sets):
        rng = np.random.default_rng(k)
        score = label * (0.5 + k) + rng.normal(0, 1, len(label))
        set_id = f"{corpus}:bench-synthetic:{k}"
        sets.append({"set_id": set_id, "corpus": corpus, "method": f"synthetic-{k}", "family": "tabular",
                     "supervision": "supervised", "granularity": "step", "seed": k, "origin": "rescore"})
        parts.append(pa.table({
            "set_id": pa.array([set_id] * len(label)), "corpus": steps.column("corpus"),
            "run_id": steps.column("run_id"), "step_idx": steps.column("step_idx"),
            "score": pa.array(score), "pred_label": pa.array((score > 1.0).astype("int8")),
            "split": pa.array(np.where(rng.random(len(label)) < 0.2, "test", "train")),
        }))
    write_source(copy, "bench-propagation-sets", {"prediction_sets": sets, "predictions": pa.concat_tables(parts)})
    return copy


def _time(fn: Callable[[], object], repeat: int) -> dict:
    """Wall time cold and warm (median), and the warm CPU time of this process (all DuckDB
    threads): on a shared, loaded machine wall time grows with the load while CPU time does
    not, and on an idle one wall time is at most the CPU time."""
    t0 = time.perf_counter()
    out = fn()
    cold = time.perf_counter() - t0
    warm, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        warm.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    rows = len(out) if hasattr(out, "__len__") else None
    return {"cold_ms": 1000 * cold, "warm_ms": 1000 * statistics.median(warm),
            "warm_cpu_ms": 1000 * statistics.median(cpu), "rows": rows}


def _heatmap(root: Path, slice_: dict, possible):
    """What the page runs for the heatmap: step counts and numerators (the possible pairs come
    from the app's cache)."""
    query = queries.runner(root)
    return P.heatmap(P.step_counts(query, slice_), P.followed_counts(query, slice_), possible)


def _header(root: Path, slice_: dict):
    """What every tab of the page runs first: the slice's corpora, steps and chain counts."""
    return P.chain_status(P.load_corpora(queries.runner(root), slice_))


def measure(root: Path, repeat: int) -> list[dict]:
    queries.connect(root).close()  # open the views once: not part of any figure
    query = queries.runner(root)
    possible = P.possible_pairs(query)
    results = []
    for slice_name, slice_ in SLICES.items():
        views: dict[str, Callable[[], object]] = {
            "reference: per-(backbone, action) counts": lambda s=slice_: query("action_rates", {"slice": s}),
            "page header (corpora, chain counts)": lambda s=slice_: _header(root, s).reasons,
            "heatmap": lambda s=slice_: _heatmap(root, s, possible),
            "cell chains (page 1)": lambda s=slice_: P.chain_table(
                P.cell_chains(query, s, "GPT-4.1", "SOLVE_CLUE", "APPLY_DELTA"), "source_step"),
            "chain list (page 1)": lambda s=slice_: P.chain_table(P.chains(query, s), "origin_step"),
            "chain list (filtered, page 20)": lambda s=slice_: P.chain_table(
                P.chains(query, s, ["SOLVE_CLUE"], 3, 4, page=20), "origin_step"),
            "role recall (own labels)": lambda s=slice_: P.role_recall(P.role_recall_counts(query, s)),
            "role recall (top 10%)": lambda s=slice_: P.role_recall(P.role_recall_counts(query, s, 10)),
        }
        if slice_name == "all":
            views["possible pairs (store-wide, cached per store version)"] = lambda: P.possible_pairs(query)
        for view, fn in views.items():
            results.append({"slice": slice_name, "view": view, **_time(fn, repeat)})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="/tmp/store100k")
    parser.add_argument("--sets", type=int, default=3, help="synthetic step-level sets to add when the store has none")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args(argv)

    root = Path(args.store)
    if not (root / "MANIFEST.json").exists():
        print(f"no store at {root}; build one with: .venv/bin/auditatlas --store {root} demo --rooms 100000 "
              "--no-catchbench", file=sys.stderr)
        return 2
    copy = None
    if not _has_step_sets(root):
        t0 = time.perf_counter()
        copy = root = _with_synthetic_sets(root, args.sets)
        print(f"added {args.sets} synthetic step-level prediction sets to a copy of the store "
              f"({time.perf_counter() - t0:.1f} s, not timed below)")
    try:
        counts = queries.connect(root).execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM steps), "
            "(SELECT count(*) FROM prediction_sets WHERE granularity = 'step'), "
            "(SELECT count(*) FROM predictions WHERE step_idx IS NOT NULL)").fetchone()
        print(f"store: {counts[0]:,} runs, {counts[1]:,} steps, {counts[2]} step-level sets, "
              f"{counts[3]:,} step predictions; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        results = measure(root, args.repeat)
    finally:
        if copy is not None:
            shutil.rmtree(copy, ignore_errors=True)

    print(f"\n{'slice':14s} {'view':56s} {'cold ms':>9s} {'warm ms':>9s} {'warm cpu':>9s} {'rows':>6s}")
    for r in results:
        flag = "" if r["warm_ms"] < TARGET_MS or "possible" in r["view"] or "reference" in r["view"] else "  > target"
        print(f"{r['slice']:14s} {r['view']:56s} {r['cold_ms']:9.0f} {r['warm_ms']:9.0f} {r['warm_cpu_ms']:9.0f} "
              f"{r['rows'] or 0:6d}{flag}")
    print(f"\ntarget: warm < {TARGET_MS} ms; load average at the end {os.getloadavg()[0]:.1f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"store": args.store, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
