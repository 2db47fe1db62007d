"""Search benchmark: the search index of a demo store (build time, size on disk, peak memory)
and ranked queries beside today's text scan, in one process (so the ratio holds on a shared
machine). Not a test: nothing is asserted.

    .venv/bin/python bench/search.py --rooms 100000 --store /tmp/store100k [--rebuild] [--out DIR]

The store is built with ``bench/scale.py demo`` when ``--store`` holds none. The index is
built from scratch (``--rebuild``, or when missing) through the query layer's own build
(``queries.search``), with the process's resident memory sampled every 0.1 s and its CPU time
(all threads) beside the wall time. Each query is timed ``REPEAT`` times on a warm index: p50
and p95 of the ranked page (20 hits with snippets) and of the scan the Explorer runs for the
same text (``step_text_scan.sql``, one page).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REPEAT = 21
QUERIES = {"one word": "thermostat", "two words": "largest element", "phrase": '"largest element"'}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_s() -> float:
    """CPU seconds of this process, every thread (tantivy's indexing threads, DuckDB's): on a
    shared machine the wall time says as much about the neighbours as about the build."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def _ensure_store(store: Path, rooms: int) -> None:
    if (store / "MANIFEST.json").is_file():
        return
    subprocess.run([sys.executable, str(REPO / "bench" / "scale.py"), "demo", "--rooms", str(rooms),
                    "--store", str(store)], check=True)


def _build(store: Path, rebuild: bool) -> dict:
    from auditatlas.search.index import SEARCH_DIR
    from queries.search import index_for

    if rebuild:
        shutil.rmtree(store / SEARCH_DIR, ignore_errors=True)
    start_rss, peak = _rss_mb(), [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0, cpu0 = time.perf_counter(), _cpu_s()
    choice = index_for(store, wait=True)
    seconds, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    done.set()
    sampler.join()
    if choice.index is None:
        raise SystemExit(f"no index: {choice.unavailable}")
    searcher = choice.index.index.searcher()
    steps, size = searcher.num_docs, _folder_mb(choice.index.folder)
    return {"index": choice.index, "build_s": round(seconds, 2), "build_cpu_s": round(cpu, 2),
            "steps_per_s": round(steps / seconds), "steps_per_cpu_s": round(steps / cpu) if cpu else None,
            "size_mb": round(size, 1), "mb_per_million_steps": round(size / steps * 1e6, 1) if steps else None,
            "rss_before_mb": round(start_rss), "peak_rss_mb": round(max(peak[0], _rss_mb())),
            "docs": steps, "segments": searcher.num_segments}


def _times(call) -> tuple[float, float]:
    call()  # warm
    samples = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=1500)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "search")
    args = parser.parse_args()
    _ensure_store(args.store, args.rooms)

    import queries
    from auditatlas.search.answer import SearchRequest, search

    built = _build(args.store, args.rebuild)
    index, query = built.pop("index"), queries.runner(args.store)
    rows = []
    for kind, text in QUERIES.items():
        request = SearchRequest(text)
        literal = SearchRequest(text.strip('"'))  # the scan reads quotes literally: the phrase itself
        ranked = search(request, index, query)
        scanned = search(literal, None, query, "benchmark")
        r50, r95 = _times(partial(search, request, index, query))
        s50, s95 = _times(partial(search, literal, None, query, "benchmark"))
        rows.append({"query": kind, "text": text, "ranked_hits": ranked.total, "scan_hits": scanned.total,
                     "ranked_p50_ms": round(r50, 1), "ranked_p95_ms": round(r95, 1),
                     "scan_p50_ms": round(s50, 1), "scan_p95_ms": round(s95, 1), "scan_over_ranked": round(s50 / r50, 1)})
    result = {"rooms": args.rooms, "store": str(args.store), "build": built, "queries": rows,
              "load": os.getloadavg(), "cpus": os.cpu_count()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"search_{args.rooms}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
