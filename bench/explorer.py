"""Benchmark: the explorer's per-run path and its slice-wide lists.

    .venv/bin/auditatlas --store /tmp/store100k demo --rooms 100000 --no-catchbench   # once (minutes)
    .venv/bin/python bench/explorer.py --store /tmp/store100k [--out bench/out/explorer.json]

Two parts:

* **One run** (a synthetic store written to a temporary folder: runs of 10, 100 and 1,000
  steps in scopes of 25 steps, chain and skip edges, 10% anomalies, one step-level prediction
  set): fetch (the page's five per-run queries: run, steps, edges, sets scoring it, the set's
  scores) + graph build and marks (auditatlas.graph) + render (the pyvis page,
  components.trace_graph). 1,000 steps is timed collapsed (how the page opens it: one node per
  scope) and expanded. Targets: < 100 ms at 100 steps, < 2 s collapsed at 1,000. The 10-step
  run is the in-process reference; ratios are against it.
* **The slice** (``--store``, e.g. the 100,000-room simulated store): a run-list page sorted on
  a run column (runs first, counts for the page only) at the first and a deep page, the count,
  a page sorted on chain length (counts for every run), and text search for a common phrase, a
  rare one and one with an action filter. Target: search < 1 s.

Each figure is the median of ``--repeat`` warm calls (after one cold call, also reported), with
the best warm call beside it: on a shared machine the median carries other processes' load.
Not a test: figures depend on the machine.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from timing import cold_warm  # noqa: E402 (bench/, the script's own folder)

SIZES = (10, 100, 1000)
SCOPE_STEPS = 25
SET_ID = "bench:random"


def synthetic_store(root: Path, seed: int = 0) -> dict[int, str]:
    """Runs of each size in SIZES, written through the store writer; returns size -> run id."""
    from auditatlas.store import write_source

    rng = np.random.default_rng(seed)
    runs, steps, edges, preds = [], [], [], []
    ids = {}
    for n in SIZES:
        run_id = f"bench:run-{n}"
        ids[n] = run_id
        runs.append({"run_id": run_id, "corpus": "bench", "backbone": "Bench", "difficulty": "hard",
                     "outcome": "failure", "n_steps": n, "label_process": "synthetic"})
        labels = (rng.random(n) < 0.10).astype(int)
        scores = rng.random(n)
        for i in range(n):
            scope = f"P{i // SCOPE_STEPS + 1}"
            steps.append({"run_id": run_id, "corpus": "bench", "step_idx": i, "step_id": f"s{i}",
                          "agent": f"agent_{i % 4}", "action": f"ACTION_{i % 6}", "scope": scope,
                          "text_in": f"input of step {i} " * 20, "text_out": f"output of step {i} " * 20,
                          "label": int(labels[i]), "label_source": "synthetic"})
            preds.append({"set_id": SET_ID, "corpus": "bench", "run_id": run_id, "step_idx": i,
                          "score": float(scores[i]), "split": "all"})
            first_of_scope = i % SCOPE_STEPS == 0
            if i > 0:
                kind = "puzzle_sequence" if first_of_scope else "data"
                edges.append({"run_id": run_id, "corpus": "bench", "src_idx": i - 1, "dst_idx": i, "kind": kind,
                              "provenance": "modeled" if first_of_scope else "observed"})
            if i % SCOPE_STEPS >= 2:
                edges.append({"run_id": run_id, "corpus": "bench", "src_idx": i - 2, "dst_idx": i,
                              "kind": "data", "provenance": "observed"})
    write_source(root, "bench", {
        "corpora": [{"corpus": "bench", "title": "Benchmark runs", "kind": "simulated", "label_process": "synthetic"}],
        "runs": runs, "steps": steps, "edges": edges,
        "prediction_sets": [{"set_id": SET_ID, "corpus": "bench", "method": "random", "granularity": "step",
                             "origin": "rescore"}],
        "predictions": preds,
    })
    return ids


def _time(fn, repeat: int) -> dict:
    result, cold, warm = cold_warm(fn, repeat)
    return {"cold_ms": cold * 1000, "warm_ms": statistics.median(warm) * 1000, "best_ms": min(warm) * 1000,
            "result": result}


def one_run(root: Path, run_id: str, collapsed: bool, selected: int = 3):
    """What the page does for one run: fetch, build and mark, collapse when asked, render."""
    import queries
    from auditatlas import graph as tg
    from components import trace_graph

    t0 = time.perf_counter()
    run = queries.run("explorer_run", {"run": run_id}, root=root)
    steps = queries.run("explorer_steps", {"run": run_id}, root=root)
    edges = queries.run("explorer_edges", {"run": run_id}, root=root)
    queries.run("explorer_run_sets", {"run": run_id}, root=root)
    scores = queries.run("explorer_scores", {"run": run_id, "set": SET_ID}, root=root)
    t1 = time.perf_counter()
    g = tg.build(steps, edges, run_id)
    tg.mark(g, scores, tg.DecisionRule(top_k=5))
    keep = [g.nodes[selected]["scope"]] if not collapsed else []
    fold = tg.default_collapsed(g, keep_open=keep) if collapsed else []
    view = tg.collapse(tg.visible(g), fold)
    t2 = time.perf_counter()
    page = trace_graph.render_html(view, selected=None if collapsed else selected, has_detector=True)
    t3 = time.perf_counter()
    return {"fetch_ms": (t1 - t0) * 1000, "build_ms": (t2 - t1) * 1000, "render_ms": (t3 - t2) * 1000,
            "nodes": view.number_of_nodes(), "edges": view.number_of_edges(), "page_kb": len(page) / 1024,
            "n_steps": int(run["n_steps"].iloc[0])}


def bench_runs(repeat: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-explorer-") as tmp:
        root = Path(tmp)
        ids = synthetic_store(root)
        for n in SIZES:
            modes = [False] if n <= 300 else [True, False]
            for collapsed in modes:
                timing = _time(partial(one_run, root, ids[n], collapsed), repeat)
                parts = [one_run(root, ids[n], collapsed) for _ in range(repeat)]
                rows.append({
                    "steps": n, "view": "collapsed" if collapsed else "expanded",
                    "total_cold_ms": timing["cold_ms"], "total_ms": timing["warm_ms"], "best_ms": timing["best_ms"],
                    "fetch_ms": statistics.median(p["fetch_ms"] for p in parts),
                    "build_ms": statistics.median(p["build_ms"] for p in parts),
                    "render_ms": statistics.median(p["render_ms"] for p in parts),
                    "nodes": parts[0]["nodes"], "edges": parts[0]["edges"], "page_kb": parts[0]["page_kb"],
                })
    ref = rows[0]["total_ms"]
    for r in rows:
        r["ratio_to_10_steps"] = r["total_ms"] / ref
    return rows


def bench_slice(store: Path, repeat: int) -> list[dict]:
    import queries
    from components.explorer_lists import phrase_regex

    base = {"slice": {}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [], "f_difficulty": [],
            "f_outcome": [], "min_steps": None, "max_steps": None,
            "min_anomalous": None, "max_anomalous": None, "min_chain": None, "max_chain": None}
    n_runs = int(queries.run("explorer_runs_count", base, root=store)["total"].iloc[0])
    deep = max(n_runs // 2 // 50 * 50, 0)
    cases = [
        ("run list: page 1 by run", "explorer_runs", {**base, "sort": "run", "descending": False, "limit": 50, "offset": 0}),
        (f"run list: page at offset {deep:,} by backbone desc", "explorer_runs",
         {**base, "sort": "backbone", "descending": True, "limit": 50, "offset": deep}),
        ("run list: count", "explorer_runs_count", base),
        ("run list: page 1 by chain length desc", "explorer_runs",
         {**base, "sort": "chain_length", "descending": True, "limit": 50, "offset": 0}),
        ("run list: chains of 3 or more, by anomalous steps", "explorer_runs",
         {**base, "min_chain": 3, "sort": "anomalous_steps", "descending": True, "limit": 50, "offset": 0}),
    ]
    for label, phrase, actions in [("common", "compass", []), ("rare", "room_0042.", []),
                                   ("absent", "no such phrase anywhere", []),
                                   ("common, one action", "compass", ["APPLY_DELTA"])]:
        cases.append((f"search ({label}: '{phrase}')", "step_text_scan",
                      {"slice": {}, "regex": phrase_regex(phrase), "phrase": phrase, "actions": actions,
                       "field": "both", "label": "any", "limit": 50, "offset": 0, "context": 60}))
    rows = []

    def call(name, params):
        return queries.run(name, params, root=store)

    for label, name, params in cases:
        t = _time(partial(call, name, params), repeat)
        frame = t["result"]
        matches = int(frame["total"].iloc[0]) if "total" in frame and len(frame) else len(frame)
        rows.append({"case": label, "query": name, "cold_ms": t["cold_ms"], "warm_ms": t["warm_ms"], "best_ms": t["best_ms"],
                     "rows": len(frame), "total": matches})
    return [{"store_runs": n_runs}] + rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=Path("/tmp/store100k"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = {"runs": bench_runs(args.repeat)}
    print("One run: fetch + build + render (median of warm calls)")
    print(pd.DataFrame(result["runs"]).round(2).to_string(index=False))
    if (args.store / "MANIFEST.json").exists():
        result["slice"] = bench_slice(args.store, args.repeat)
        print(f"\nSlice lists on {args.store} ({result['slice'][0]['store_runs']:,} runs)")
        print(pd.DataFrame(result["slice"][1:]).round(1).to_string(index=False))
    else:
        print(f"\n{args.store} holds no store: build it with "
              "`.venv/bin/auditatlas --store /tmp/store100k demo --rooms 100000 --no-catchbench`.")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
