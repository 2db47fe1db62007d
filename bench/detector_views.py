"""Benchmark: the Detectors page's queries (AUROC grid, overall comparison, a cell's errors) on a
large store.

    .venv/bin/auditatlas --store /tmp/store100k demo --rooms 100000 --no-catchbench   # once
    .venv/bin/python bench/detector_views.py [--store /tmp/store100k-views] [--base /tmp/store100k]

The store must hold step-level prediction sets. When ``--store`` does not exist yet it is copied
from ``--base`` (never modified) and, when it holds no step-level set of the corpus, synthetic
re-scored sets are written into it with ``auditatlas.store.write_source`` (source
``bench-detector-sets``): ``--methods`` detectors x ``--seeds`` seeds, each scoring every step of
the corpus, 20% of the runs in the test split (room-disjoint like MAADBench's), scores random
with a shift on anomalies so the ROC-AUCs are not all 0.5.

Figures: **cold** = the first call of a query in this process (DuckDB views opened before and
timed apart), **warm** = median of ``--repeat`` further calls. No Streamlit cache is involved,
so these are the times of a cache miss in the app. As a reference in the same process, the
plain scan the grid cannot avoid (every test prediction of those sets joined to its labeled
step, counted) is timed the same way; the ratio grid / reference says what the ranking and
grouping cost on top of the join. Not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from timing import cold_warm  # noqa: E402 (bench/, the script's own folder)

BENCH_SOURCE = "bench-detector-sets"
REFERENCE_SQL = """
SELECT count(*) FROM predictions p
JOIN steps s ON s.run_id = p.run_id AND s.step_idx = p.step_idx
WHERE list_contains($set_ids, p.set_id) AND p.split IN ('test', 'all') AND s.label IS NOT NULL
"""


def ensure_store(store: Path, base: Path, corpus: str, methods: int, seeds: int) -> dict:
    """Copy the base store if needed and add synthetic step-level sets when it has none."""
    import queries
    from auditatlas.store import SourceWriter

    if not store.exists():
        if not base.exists():
            raise SystemExit(f"{base} does not exist: build it with `.venv/bin/auditatlas --store {base} demo "
                             "--rooms 100000 --no-catchbench`.")
        shutil.copytree(base, store)
    con = queries.connect(store)
    n_sets = con.execute("SELECT count(*) FROM prediction_sets WHERE corpus = ? AND granularity = 'step'",
                         [corpus]).fetchone()[0]
    if n_sets:
        return {"synthetic_sets_written": 0, "step_sets": int(n_sets)}
    t0 = time.perf_counter()
    sets, tables = synthetic_sets(con, corpus, methods, seeds)
    # One batch per set, as the re-scoring engine writes large sets (one Arrow table of every
    # set's predictions overflows a string array at a million rooms).
    with SourceWriter(store, BENCH_SOURCE) as writer:
        for row, table in zip(sets, tables):
            writer.append({"prediction_sets": [row], "predictions": table})
        writer.commit({"format": "rescore", "origin": "bench/detector_views.py"})
    return {"synthetic_sets_written": len(sets), "step_sets": len(sets),
            "prediction_rows": sum(t.num_rows for t in tables), "write_s": time.perf_counter() - t0}


def synthetic_sets(con, corpus: str, methods: int, seeds: int):
    import numpy as np
    import pyarrow as pa

    # Room-disjoint split, deterministic: 20% of the rooms (by a hash of the room id) are test.
    steps = con.execute("SELECT s.run_id, s.step_idx, coalesce(s.label, 0) AS label, "
                        "CASE WHEN hash(r.room_id) % 5 = 0 THEN 'test' ELSE 'train' END AS split "
                        "FROM steps s JOIN runs r USING (run_id) WHERE s.corpus = ?", [corpus]).to_arrow_table()
    n = steps.num_rows
    split = steps.column("split")
    label = steps.column("label").to_numpy().astype(float)
    names = ["random", "iforest", "xgboost", "lof", "ecod", "knn"][:methods]
    set_rows, tables = [], []
    for i, method in enumerate(names):
        for seed in range(seeds):
            rng = np.random.default_rng(1000 * i + seed)
            set_id = f"{BENCH_SOURCE}:{method}:seed{seed}"
            score = rng.normal(size=n) + (0.0 if method == "random" else 0.4 * i) * label
            set_rows.append({"set_id": set_id, "corpus": corpus, "method": method, "family": "random" if method == "random" else "tabular",
                             "supervision": "unsupervised", "granularity": "step", "seed": seed,
                             "params": json.dumps({"fit_seconds": 1.0 + i, "score_seconds": 0.1 * (i + 1), "peak_memory_mb": 50.0 * (i + 1)}),
                             "feature_set": None if method == "random" else "bench", "origin": "rescore",
                             "created_at": "2026-01-01T00:00:00+00:00"})
            tables.append(pa.table({
                "set_id": pa.array([set_id] * n), "corpus": pa.array([corpus] * n),
                "run_id": steps.column("run_id"), "step_idx": steps.column("step_idx"),
                "score": pa.array(score), "pred_label": pa.nulls(n, pa.int8()), "split": split,
            }))
    return set_rows, tables


def _a_difficulty(store: Path, corpus: str) -> str:
    import queries

    cur = queries.connect(store)
    try:
        return cur.execute("SELECT min(difficulty) FROM runs WHERE corpus = ?", [corpus]).fetchone()[0]
    finally:
        cur.close()


def timed(fn, repeat: int) -> dict:
    result, cold, warm = cold_warm(fn, repeat)
    return {"cold_s": cold, "warm_median_s": statistics.median(warm), "warm_min_s": min(warm), "result": result}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path("/tmp/store100k-views"))
    ap.add_argument("--base", type=Path, default=Path("/tmp/store100k"))
    ap.add_argument("--corpus", default="maadbench-sim")
    ap.add_argument("--methods", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "detector_views.json")
    args = ap.parse_args(argv)

    setup = ensure_store(args.store, args.base, args.corpus, args.methods, args.seeds)
    import queries
    from auditatlas.analyses import detector_comparison as dv

    t0 = time.perf_counter()
    con = queries.connect(args.store)
    open_views = time.perf_counter() - t0
    # The derived tables (queries/derived.py) are built once per store version: timed apart,
    # from scratch, with the build's peak memory read off the process.
    import resource

    shutil.rmtree(args.store / "derived", ignore_errors=True)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    queries.warm(args.store)
    build = {"derived_build_s": round(time.perf_counter() - t0, 2),
             "max_rss_mb_before": rss_before // 1024,
             "max_rss_mb_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}
    query = queries.runner(args.store)
    sets = dv.step_sets(dv.prediction_sets(query, args.corpus))
    ids = list(sets["set_id"])
    counts = con.execute("SELECT (SELECT count(*) FROM steps WHERE corpus = $c) AS steps, "
                         "(SELECT count(*) FROM runs WHERE corpus = $c) AS runs, "
                         "(SELECT count(*) FROM predictions WHERE list_contains($ids, set_id)) AS predictions, "
                         "(SELECT count(*) FROM predictions WHERE list_contains($ids, set_id) AND split IN ('test', 'all')) AS test_predictions",
                         {"c": args.corpus, "ids": ids}).fetchone()
    con.close()

    def reference():
        cur = queries.connect(args.store)
        try:
            return cur.execute(REFERENCE_SQL, {"set_ids": ids}).fetchone()[0]
        finally:
            cur.close()

    import os
    load_before = os.getloadavg()
    slice_ = {"corpus": [args.corpus]}
    acts = query("grid_actions", {"slice": slice_, "target_corpus": args.corpus, "by_backbone": True})
    backbones, actions = sorted(acts["backbone"].unique()), sorted(acts["action"].unique())
    difficulty = _a_difficulty(args.store, args.corpus)
    rows = {
        "reference scan (join + count)": timed(reference, args.repeat),
        "detector_sets": timed(lambda: len(query("detector_sets", {"corpus": args.corpus})), args.repeat),
        "grid_cells per backbone x action": timed(lambda: len(dv.grid_cells(query, slice_, ids, backbones, actions, True)), args.repeat),
        "grid_cells per backbone x action, 3 sets": timed(lambda: len(dv.grid_cells(query, slice_, ids[:3], backbones, actions, True)), args.repeat),
        "grid_cells pooled backbones": timed(lambda: len(dv.grid_cells(query, slice_, ids, backbones, actions, False)), args.repeat),
        # The grid's bottom row and right column with their run-clustered intervals.
        "grid_means per backbone": timed(lambda: len(dv.grid_means(query, slice_, sets, backbones, actions, True)[0]), args.repeat),
        "grid_means per backbone, one difficulty": timed(lambda: len(dv.grid_means(query, {**slice_, "difficulty": [difficulty]}, sets, backbones, actions, True)[0]), args.repeat),
        "grid_actions": timed(lambda: len(query("grid_actions", {"slice": slice_, "target_corpus": args.corpus, "by_backbone": True})), args.repeat),
        "detector_overall (top 10%)": timed(lambda: len(query("detector_overall", {"slice": slice_, "set_ids": ids, "threshold": "top_k", "top_k": 10.0})), args.repeat),
        "grid_errors (one cell, one set)": timed(lambda: len(query("grid_errors", {"slice": slice_, "set_id": ids[-1], "cell_backbone": dv.ALL_BACKBONES, "cell_action": "APPLY_DELTA", "threshold": "top_k", "top_k": 10.0, "limit": 20})), args.repeat),
        # A slice that splits the rank groups: the grid ranks the sliced rows itself.
        "grid_cells per backbone x action, one difficulty": timed(lambda: len(dv.grid_cells(query, {**slice_, "difficulty": [difficulty]}, ids, backbones, actions, True)), args.repeat),
        "detector_overall (top 10%), one difficulty": timed(lambda: len(query("detector_overall", {"slice": {**slice_, "difficulty": [difficulty]}, "set_ids": ids, "threshold": "top_k", "top_k": 10.0})), args.repeat),
        "detector_coverage": timed(lambda: len(query("detector_coverage", {"slice": slice_, "set_ids": ids})), args.repeat),
        # As the page calls them: the set list is already known (one detector_sets query per page run).
        "compute_grid (grid tab: actions, cells, coverage)": timed(lambda: len(dv.compute_grid(query, args.corpus, slice_, True, sets=sets).cells), args.repeat),
        "compute_overall (overall tab)": timed(lambda: len(dv.compute_overall(query, args.corpus, slice_, "top_k", 10.0, sets=sets).per_detector), args.repeat),
    }
    ref = rows["reference scan (join + count)"]["warm_median_s"]
    import os
    print(f"load average before / after: {load_before} / {os.getloadavg()}")
    print(f"store {args.store}: {counts[1]:,} runs, {counts[0]:,} steps; {len(ids)} step-level sets, "
          f"{counts[2]:,} predictions ({counts[3]:,} test); views opened in {open_views:.3f} s; setup {setup}")
    print(f"derived tables built in {build['derived_build_s']} s; peak RSS {build['max_rss_mb_before']} MB before, "
          f"{build['max_rss_mb_after']} MB after")
    print("\n| query | rows | cold (s) | warm median (s) | warm / reference |\n|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['result']} | {r['cold_s']:.3f} | {r['warm_median_s']:.3f} | {r['warm_median_s'] / ref:.2f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"store": str(args.store), "runs": counts[1], "steps": counts[0], "sets": len(ids),
                                    "predictions": counts[2], "test_predictions": counts[3], "open_views_s": open_views,
                                    "setup": setup, "build": build, "load_before": load_before, "load_after": os.getloadavg(), "queries": rows}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
