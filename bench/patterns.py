"""Patterns benchmark: the step vectors' build (time, size on disk, peak RSS), "steps like this
one" p50 for a few anchors, and failure clusters for the whole slice and one backbone.

    .venv/bin/python bench/scale.py demo --rooms 100000 --store /tmp/store100k
    .venv/bin/python bench/patterns.py --store /tmp/store100k [--anchors 5] [--rebuild]

The vectors are built cold unless present (``--rebuild`` removes them first). Clusters are
timed cold (their cache removed) and warm. Peak RSS is the process's own (``ru_maxrss``).
Not a test: nothing is asserted; say the machine's load (``uptime``) beside the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import queries  # noqa: E402
from auditatlas.patterns import build, clusters, similar, vectors  # noqa: E402


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--anchors", type=int, default=5)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    root = Path(args.store)
    query = queries.runner(root)
    folder = build.vectors_home(root) / build.version_key(root)
    if args.rebuild and folder.exists():
        shutil.rmtree(folder)
    out: dict = {"store": str(root), "load": os.getloadavg()}
    rss_before = _rss_mb()
    t = time.perf_counter()
    found = vectors.load(root, query)
    out["build_s"] = round(time.perf_counter() - t, 2)
    out["rows"] = found.n_rows
    out["size_mb"] = round(_size(found.folder) / 1e6, 1)
    out["peak_rss_mb_after_build"] = round(_rss_mb(), 0)
    out["peak_rss_mb_before_build"] = round(rss_before, 0)
    rng = np.random.default_rng(0)
    anchors = [found.keys(np.array([r])).iloc[0] for r in rng.choice(found.n_rows, args.anchors, replace=False)]
    times = []
    for anchor in anchors:
        similar.similar_steps(found, query, anchor["run_id"], int(anchor["step_idx"]), k=args.k)  # warm the caches
        t = time.perf_counter()
        result = similar.similar_steps(found, query, anchor["run_id"], int(anchor["step_idx"]), k=args.k)
        times.append(time.perf_counter() - t)
    out["similar_p50_ms"] = round(1000 * statistics.median(times), 1)
    out["similar_max_ms"] = round(1000 * max(times), 1)
    out["similar_example"] = result.summary
    backbone = str(found.runs["backbone"].dropna().iloc[0])
    for name, slice_ in (("whole", {}), (f"backbone={backbone}", {"backbone": [backbone]})):
        shutil.rmtree(found.folder / clusters.CACHE, ignore_errors=True)
        t = time.perf_counter()
        result = clusters.failure_clusters(found, query, slice_, seed=0)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        clusters.failure_clusters(found, query, slice_, seed=0)
        out[f"clusters_{name}"] = {"steps": len(result.members), "cold_s": round(cold, 2),
                                   "warm_s": round(time.perf_counter() - t, 2)}
    out["peak_rss_mb"] = round(_rss_mb(), 0)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
