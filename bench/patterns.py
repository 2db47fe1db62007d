"""Patterns benchmark: the step vectors' build (time, size on disk, peak RSS), "steps like this
one" p50 for a few anchors, and failure clusters for the whole slice and one backbone.

    .venv/bin/python bench/scale.py demo --rooms 100000 --store /tmp/store100k
    .venv/bin/python bench/patterns.py --store /tmp/store100k [--anchors 20] [--rebuild] [--no-clusters]

The vectors are built cold unless present (``--rebuild`` removes them first). Clusters are
timed cold (their cache removed) and warm. Peak RSS is the process's own (``ru_maxrss``).

"Steps like this one" is timed (wall and CPU, each anchor once warm) for the whole store and
for one backbone's slice, beside ``reference_nearest``: the full-array code it replaced (every
row's similarity in one 9.3M-row array at a million rooms, then ``argpartition``), run on the
same anchors in this process, so the ratio holds on a shared machine. The answers are compared
(the same rows, the same scores); the block scan's own time (no text) and the query's peak of
allocated memory (``tracemalloc``: numpy's arrays, not the memory-mapped vectors' page cache)
are reported.
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
import tracemalloc
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import queries  # noqa: E402
from auditatlas.patterns import build, clusters, similar, vectors  # noqa: E402


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reference_nearest(found: vectors.StepVectors, row: int, in_slice: np.ndarray, k: int):
    """The previous code (one similarity per row of the store in full arrays, then
    ``argpartition``), kept to time against and to check the new answers by."""
    anchor = found.text_rows(np.array([row]))
    text = np.zeros(found.n_rows, dtype=np.float32)
    for shard in found.shards:  # the postings read in numpy, as before kernels.py
        indptr, indices, data = shard.index
        for column, weight in zip(anchor.indices, anchor.data):
            lo, hi = int(indptr[column]), int(indptr[column + 1])
            if hi > lo:
                text[shard.start + np.asarray(indices[lo:hi])] += weight * np.asarray(data[lo:hi])
    step = found.step
    weights = similar.WEIGHTS
    total = weights["text"] * text
    total += weights["action"] * (np.asarray(step["action"]) == step["action"][row]).astype(np.float32) \
        * (step["action"][row] >= 0)
    total += weights["agent"] * (np.asarray(step["agent"]) == step["agent"][row]).astype(np.float32) \
        * (step["agent"][row] >= 0)
    total += weights["position"] * (1.0 - np.abs(np.asarray(step["position"]) - step["position"][row]))
    if step["has_size"][row]:
        gap = np.abs(np.asarray(step["size"]) - step["size"][row])
        total += weights["size"] * np.exp(-gap) * np.asarray(step["has_size"])
    mask = np.repeat(in_slice, np.diff(found.run_start))
    mask[row] = False
    total[~mask] = -np.inf
    top = np.argpartition(-total, k - 1)[:k]
    top = top[np.lexsort((top, -total[top]))]
    return top, total[top], text[top]


def _timed(fn) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _peak_alloc_mb(fn) -> float:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def bench_nearest(found: vectors.StepVectors, anchors: list[int], slice_: dict, k: int) -> dict:
    """``similar.nearest`` and the reference on each anchor (each warmed by one call first),
    the answers compared; the peak allocation."""
    in_slice = found.run_mask(slice_)
    new = {"wall": [], "cpu": []}
    old = {"wall": [], "cpu": []}
    agree = 0
    for row in anchors:
        similar.nearest(found, row, in_slice, k)
        reference_nearest(found, row, in_slice, k)
        got, wall, cpu = _timed(partial(similar.nearest, found, row, in_slice, k))
        new["wall"].append(wall), new["cpu"].append(cpu)
        want, wall, cpu = _timed(partial(reference_nearest, found, row, in_slice, k))
        old["wall"].append(wall), old["cpu"].append(cpu)
        # The same scores, and the same rows in the same order above the k-th score (the
        # reference's argpartition takes any of the rows tied at the cut).
        above = got[1] > got[1][-1] + 1e-6
        agree += bool(np.allclose(got[1], want[1], atol=1e-6) and np.array_equal(got[0][above], want[0][above]))
    return {"anchors": len(anchors), "k": k, "slice_rows": int(np.diff(found.run_start)[in_slice].sum()),
            "nearest_p50_ms": _ms(new["wall"]), "nearest_max_ms": _max_ms(new["wall"]),
            "nearest_cpu_p50_ms": _ms(new["cpu"]),
            "reference_p50_ms": _ms(old["wall"]), "reference_max_ms": _max_ms(old["wall"]),
            "reference_cpu_p50_ms": _ms(old["cpu"]),
            "ratio_p50_wall": round(statistics.median(old["wall"]) / statistics.median(new["wall"]), 2),
            "ratio_p50_cpu": round(statistics.median(old["cpu"]) / max(statistics.median(new["cpu"]), 1e-9), 2),
            "answers_agree": agree,
            "peak_alloc_mb": round(_peak_alloc_mb(lambda: similar.nearest(found, anchors[0], in_slice, k)), 1),
            "reference_peak_alloc_mb": round(_peak_alloc_mb(lambda: reference_nearest(found, anchors[0], in_slice, k)), 1)}


def _ms(xs: list[float]) -> float:
    return round(1000 * statistics.median(xs), 1)


def _max_ms(xs: list[float]) -> float:
    return round(1000 * max(xs), 1)


def bench_similar(found: vectors.StepVectors, query, anchors: list[int], slice_: dict, k: int) -> dict:
    """The whole answer (``similar_steps``: the neighbours, their keys, labels and every set's
    scores read from the store), warm, beside ``bench_nearest``'s vectors part."""
    wall, cpu = [], []
    for row in anchors:
        key = found.keys(np.array([row])).iloc[0]
        ask = partial(similar.similar_steps, found, query, key["run_id"], int(key["step_idx"]), slice_, k)
        ask()
        result, w, c = _timed(ask)
        wall.append(w), cpu.append(c)
    return {"similar_p50_ms": _ms(wall), "similar_max_ms": _max_ms(wall), "similar_cpu_p50_ms": _ms(cpu),
            "example": result.summary, **bench_nearest(found, anchors, slice_, k)}


def bench_scan(found: vectors.StepVectors, k: int) -> dict:
    """The block scan alone (what an anchor sharing no word with any row costs), whole store."""
    row = 0
    anchor = similar.Anchor.of(found, row)
    text = np.zeros(found.n_rows, dtype=np.float32)
    everyone = np.ones(len(found.runs), dtype=bool)
    similar._scan(anchor, found, text, row, everyone, True, k)
    times = [_timed(lambda: similar._scan(anchor, found, text, row, everyone, True, k))[1:] for _ in range(3)]
    return {"scan_p50_ms": round(1000 * statistics.median(t[0] for t in times), 1),
            "scan_cpu_p50_ms": round(1000 * statistics.median(t[1] for t in times), 1)}


def tile(found: vectors.StepVectors, copies: int, into: Path) -> vectors.StepVectors:
    """``copies`` copies of a built store's vectors in one build folder (runs renamed ``tN:``, in
    order; the text shards linked, not copied): a store ``copies`` times as large with the same
    text, for timing the vectors' part of an answer where no such store is built yet."""
    import pandas as pd

    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    meta = json.loads((found.folder / build.DONE).read_text())
    n_runs, n_rows = meta["runs"], meta["rows"]
    for name in build.FEATURES:
        part = np.asarray(found.step[name])
        whole = np.lib.format.open_memmap(into / f"{name}.npy", mode="w+", dtype=part.dtype, shape=(n_rows * copies,))
        for c in range(copies):
            whole[c * n_rows:(c + 1) * n_rows] = part + (c * n_runs if name == "run_pos" else 0)
        whole.flush()
    runs = pd.concat([found.runs.assign(run_id=f"t{c}:" + found.runs["run_id"].astype(str)) for c in range(copies)],
                     ignore_index=True)
    runs.to_parquet(into / "runs.parquet", index=False)
    shards = []
    for c in range(copies):
        for i, (lo, hi) in enumerate(meta["shards"]):
            (into / f"shard-{len(shards)}").symlink_to(found.folder / f"shard-{i}")
            shards.append([lo + c * n_rows, hi + c * n_rows])
    (into / build.DONE).write_text(json.dumps({**meta, "rows": n_rows * copies, "runs": n_runs * copies,
                                               "shards": shards}))
    return vectors.StepVectors(into)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--anchors", type=int, default=20)
    parser.add_argument("--no-clusters", action="store_true")
    parser.add_argument("--tile", type=int, default=0,
                        help="also time the vectors' part on this many copies of the store's vectors (then removed)")
    parser.add_argument("--tile-into", type=Path, default=Path("/tmp/patterns-tiled"))
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
    anchors = [int(r) for r in rng.choice(found.n_rows, args.anchors, replace=False)]
    backbone = str(found.runs["backbone"].dropna().iloc[0])
    out["similar_whole"] = bench_similar(found, query, anchors, {}, args.k)
    print(json.dumps(out, indent=2), flush=True)
    in_backbone = np.flatnonzero(found.slice_mask({"backbone": [backbone]}))
    in_backbone = [int(r) for r in rng.choice(in_backbone, min(args.anchors, len(in_backbone)), replace=False)]
    out[f"similar_backbone={backbone}"] = bench_similar(found, query, in_backbone, {"backbone": [backbone]}, args.k)
    out["scan"] = bench_scan(found, args.k)
    out["load_after_similar"] = os.getloadavg()
    print(json.dumps(out, indent=2), flush=True)
    if args.tile:
        tiled = tile(found, args.tile, args.tile_into)
        spread = [int(r) for r in rng.choice(tiled.n_rows, args.anchors, replace=False)]
        name = f"tiled_x{args.tile}"
        out[name] = {"rows": tiled.n_rows, **bench_nearest(tiled, spread, {}, args.k)}
        in_backbone = np.flatnonzero(tiled.slice_mask({"backbone": [backbone]}))
        picked = [int(r) for r in rng.choice(in_backbone, args.anchors, replace=False)]
        out[f"{name}_backbone={backbone}"] = bench_nearest(tiled, picked, {"backbone": [backbone]}, args.k)
        out[f"{name}_scan"] = bench_scan(tiled, args.k)
        out[f"load_after_{name}"] = os.getloadavg()
        tiled.lease.release()
        shutil.rmtree(args.tile_into)
        print(json.dumps(out, indent=2), flush=True)
    if args.no_clusters:
        return
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
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
