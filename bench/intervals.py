"""Benchmark: what the 95% intervals cost the boards and the AUROC grid tab.

    .venv/bin/python bench/intervals.py --store /tmp/bench-store [--repeat 3]

Boards: each board's ``run_board`` warm, with its intervals and with the interval functions of
``auditatlas.analyses.board_intervals`` replaced by ones returning nothing, alternating in one
process, so the ratio is against a reference run in the same process. The grid: its SQL now
computes the intervals itself (there is no switch), so its without/with figure comes from
``bench/detector_views.py`` run on a checkout without the intervals and on one with them (each
against its own in-process reference scan); here the grid tab is timed once more beside the
boards.

Not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BOARDS = [("pre", None), ("live", "maadbench-sim"), ("post-detection", "maadbench-sim"),
          ("post-localization", "maadbench-sim")]


@contextmanager
def without_intervals():
    """Every board's interval functions answer nothing (the boards then carry no interval)."""
    from auditatlas.analyses import board_intervals as ci

    saved = {name: getattr(ci, name) for name in ("auc_interval", "share_interval", "mean_interval", "pre_intervals")}
    ci.auc_interval = ci.share_interval = ci.mean_interval = lambda *a, **k: None
    ci.pre_intervals = lambda *a, **k: {}
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(ci, name, fn)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path("/tmp/bench-store"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import queries
    from auditatlas.analyses import detector_comparison as dv
    from auditatlas.analyses.board_registry import run_board

    query = queries.runner(args.store)
    print(f"load average before: {os.getloadavg()}")
    print("| board | with intervals (s) | without (s) | ratio |\n|---|---|---|---|")
    for name, corpus in BOARDS:
        run_board(name, query, corpus)  # cold: views, imports
        with_, without = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            run_board(name, query, corpus)
            with_.append(time.perf_counter() - t0)
            with without_intervals():
                t0 = time.perf_counter()
                run_board(name, query, corpus)
                without.append(time.perf_counter() - t0)
        a, b = statistics.median(with_), statistics.median(without)
        print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f} |")
    sets = dv.step_sets(dv.prediction_sets(query, "maadbench-sim"))
    dv.compute_grid(query, "maadbench-sim", {}, True, sets=sets)
    times = []
    for _ in range(args.repeat * 2):
        t0 = time.perf_counter()
        dv.compute_grid(query, "maadbench-sim", {}, True, sets=sets)
        times.append(time.perf_counter() - t0)
    print(f"grid tab (compute_grid, {len(sets)} sets): warm median {statistics.median(times):.3f} s")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
