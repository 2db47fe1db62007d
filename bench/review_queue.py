"""Benchmark: review queue quality, the label-doubt order against the random order on planted flips.

    .venv/bin/python bench/review_queue.py [--store /tmp/bench-store] [--flip-seeds 0 1 2]
                                           [--out bench/out/review_queue.json]

Without ``--store`` the default store is built first into a scratch folder, as ``make run``
builds it (1,500 simulated rooms, the CatchBench release, the standard panel: every registry
detector x 5 seeds); with it, that store is read (and never written). Then, per flip seed:

1. a copy of the store with a seeded 5% of the simulated corpus's labeled steps flipped
   (``auditatlas.planted_flips.planted_copy``; only the copy is written);
2. on the simulated corpus of the copy: the doubt order as /review builds it (the supervised
   half: out-of-fold probabilities of a random forest on the step features, ranked by cleanlab;
   and the label-free half: the unsupervised and zero-shot sets of the panel), the label-free
   half alone, and the random order under seeds 0-4;
3. each order's share of the flips among its first 5% of the labeled steps
   (``auditatlas.analyses.queue_quality``), and the CPU the supervised half took.

Why the panel's label-free sets stay valid on the flipped copy: they never saw a label. Its
supervised and one-class sets were fit on the labels before the flip (they know the true ones);
no order here reads them.

Not a test: the figures depend on the corpus and seeds, so they are reported; the test
(tests/test_review_queue_quality.py) asserts the doubt order beats random on a small store.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CORPUS = "maadbench-sim"
SHARE = 0.05


def build_store(root: Path) -> dict:
    from auditatlas.ingest.demo import DEFAULT_ROOMS, build_default_store

    wall, cpu = time.perf_counter(), time.process_time()
    build_default_store(root, rooms=DEFAULT_ROOMS, seed=0)
    return {"rooms": DEFAULT_ROOMS, "build_wall_s": round(time.perf_counter() - wall, 1),
            "build_cpu_s": round(time.process_time() - cpu, 1)}


def one_flip_seed(store: Path, scratch: Path, flip_seed: int) -> dict:
    import queries
    from auditatlas.analyses import queue_quality
    from auditatlas.planted_flips import planted_copy

    copy = scratch / f"flipped-{flip_seed}"
    wall = time.perf_counter()
    flips = planted_copy(store, copy, CORPUS, SHARE, flip_seed)
    copied = time.perf_counter() - wall
    wall = time.perf_counter()
    quality = queue_quality.measure(queries.runner(copy), copy, {"corpus": [CORPUS]}, flips)
    shutil.rmtree(copy, ignore_errors=True)
    return {"flip_seed": flip_seed, "flipped_to_anomaly": int((flips["label"] == 1).sum()),
            "flipped_to_normal": int((flips["label"] == 0).sum()), "copy_and_flip_s": round(copied, 1),
            "measure_wall_s": round(time.perf_counter() - wall, 1), **quality.to_json()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, help="a default store to read (default: build one in a scratch folder)")
    parser.add_argument("--flip-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "review_queue.json")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="review-queue-"))
    try:
        store, built = args.store, None
        if store is None:
            store = scratch / "store"
            built = build_store(store)
        runs = [one_flip_seed(store, scratch, s) for s in args.flip_seeds]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {"store": str(args.store) if args.store else "built", "built": built, "share_flipped": SHARE,
              "window": "first 5% of the labeled steps", "runs": runs, "load_1min": os.getloadavg()[0],
              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"{'flip seed':>9} {'labeled':>8} {'flips':>6} {'window':>7} {'doubt':>7} {'label-free':>11} "
          f"{'random (mean, 5 seeds)':>23} {'supervised CPU-s':>17}")
    for r in runs:
        print(f"{r['flip_seed']:>9} {r['labeled']:>8,} {r['flips']:>6} {r['window_steps']:>7} {r['doubt']:>7.1%} "
              f"{r['label_free_only']:>11.1%} {r['random_mean']:>23.1%} {r['supervised_cpu_s']:>17}")
    if built:
        print(f"store built in {built['build_wall_s']} s ({built['build_cpu_s']} CPU-s in this process)")
    print(f"load (1 min) {result['load_1min']:.2f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
