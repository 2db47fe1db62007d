"""Benchmarks: wall time of the four Boards on a store (default: the 1,500-room demo + CatchBench).

    .venv/bin/auditatlas --store /tmp/bench-store demo          # build the store once
    .venv/bin/python bench/boards.py --store /tmp/bench-store [--out bench/out/boards]

Two views of each board, each board in its own fresh process so no board profits from
another's imports, open DuckDB views or module caches:

* ``cli``: wall time of the whole ``auditatlas --store S board NAME [--corpus C]`` command as a
  user runs it (interpreter start, imports, computing the board, reconciling it with the
  published values, printing).
* ``run_board``: ``time.perf_counter`` around ``auditatlas.analyses.board_registry.run_board`` inside one child
  process, called twice: the first call is cold (views opened, SQL read, lazy imports inside
  the board's module), the second warm (same process, so only the computation repeats). The
  imports before the first call are timed apart.

Not a test: figures depend on the machine, so they are reported, not asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
# (CLI board name, corpus or None for the board's default corpus), in lifecycle order.
BOARDS = [
    ("pre", None),
    ("live", "maadbench-sim"),
    ("post-detection", "maadbench-sim"),
    ("post-localization", "maadbench-sim"),
]


def _child(name: str, corpus: str | None, store: str) -> dict:
    """Measure one board inside this (fresh) process."""
    t0 = time.perf_counter()
    sys.path.insert(0, str(REPO))
    import queries
    from auditatlas.analyses.board_registry import run_board

    query = queries.runner(store)
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = run_board(name, query, corpus)
    t_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_board(name, query, corpus)
    t_warm = time.perf_counter() - t0
    return {
        "board": name, "corpus": result.corpus, "n_items": result.n_items, "item_kind": result.item_kind,
        "entrants": len(result.rows), "contrasts": len(result.contrasts), "import_s": t_import,
        "run_board_cold_s": t_cold, "run_board_warm_s": t_warm,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _cli_wall(name: str, corpus: str | None, store: str) -> float:
    cmd = [str(VENV_BIN / "auditatlas"), "--store", store, "board", name] + (["--corpus", corpus] if corpus else [])
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _measure(name: str, corpus: str | None, store: str) -> dict:
    cmd = [sys.executable, __file__, "--store", store, "--one", name] + (["--corpus", corpus] if corpus else [])
    res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    res["cli_wall_s"] = _cli_wall(name, corpus, store)
    return res


def _table(results: list[dict]) -> str:
    lines = ["| board | corpus | items | entrants | contrasts | CLI wall (s) | import (s) | run_board cold (s) "
             "| run_board warm (s) | peak RSS MB |", "|" + "---|" * 10]
    for r in results:
        lines.append(f"| {r['board']} | {r['corpus']} | {r['n_items']:,} {r['item_kind']} | {r['entrants']} | "
                     f"{r['contrasts']} | {r['cli_wall_s']:.2f} | {r['import_s']:.2f} | {r['run_board_cold_s']:.2f} | "
                     f"{r['run_board_warm_s']:.2f} | {r['peak_rss_mb']:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="store folder (build it with 'auditatlas --store S demo')")
    parser.add_argument("--out", default=str(REPO / "bench" / "out" / "boards"))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child-process mode: the board to measure
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_child(args.one, args.corpus, args.store)))
        return
    results = []
    load_before = os.getloadavg()  # other processes on the machine skew every figure
    for name, corpus in BOARDS:
        print(f"measuring board {name} ...", file=sys.stderr, flush=True)
        results.append(_measure(name, corpus, args.store))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "boards.json").write_text(json.dumps({"store": args.store, "load_avg_before": load_before,
                                                   "load_avg_after": os.getloadavg(), "results": results}, indent=2))
    print(_table(results))


if __name__ == "__main__":
    main()
