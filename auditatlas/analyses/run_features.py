"""Run-level features of a run's prefix: the feature groups of the POST detection and LIVE
boards (CatchBench, specs/catchbench.md "POST detection and LIVE boards").

Where the definitions come from
-------------------------------
The feature groups are the GRADE structural layers that the ``auditable`` library (0.3.0, the
library of the paper's feature constructions) defines in ``auditable.graph.features`` and
that its registered run detectors read (``run.lr_flat`` = "size (flat)", ``run.lr_flatdep``
= "auditable (size+deps)", ``run.lr_full`` = "full", ``run.pyod_ecod`` = "pyod-flatten
(ECOD)"). The column names and definitions below are auditable's, so a row here equals
``auditable.graph.feature_vector(build_graph(prefix, dependency="explicit",
shared_resource=False), layer=...)`` for the same prefix; ``tests/test_detection.py`` checks
that equality on randomly generated runs.

We do not call auditable per run because its path builds a NetworkX graph per run and prefix
(about 0.5 ms each: 3 s for 1,500 runs x 4 prefixes); here the counts come from one DuckDB
query per prefix (``queries/sql/run_prefix_features.sql``) and the one genuinely sequential
quantity, the chain depth, from a vectorized numpy pass over all runs at once.

Definitions, on the prefix of k steps and its dependency DAG (the store's ``edges`` with both
ends in the prefix, de-duplicated by (src, dst) pair; an edge src -> dst means step dst
relied on step src):

- size ("flat"): ``n_steps`` = k; ``n_tool_calls`` = steps with ``is_tool`` (null counts as a
  decision); ``n_decisions`` = k - n_tool_calls; ``n_agents`` = distinct agents (a null agent
  is one anonymous agent).
- execution topology ("exec"): ``max_agent_outdeg`` = the most steps taken by one agent;
  ``agent_gini`` = Gini concentration of steps per agent (0 for a single agent);
  ``n_agent_transitions`` = distinct ordered (previous agent, agent) pairs over consecutive
  steps where the agent changes; ``agent_recurrence`` = share of those changes that go back to
  an agent that already acted (0 without changes).
- raw dependency counts ("dep"): ``n_dep_edges``; ``dep_depth`` = edges on the longest
  dependency chain; ``max_blast_indeg`` = the most later steps resting directly on one step
  (its dependents); ``max_audit_outdeg`` = the most earlier steps one step rests on directly.
- size-normalized dependency ("dep_dens" + "dep_shape"): ``dep_edges_per_step`` =
  n_dep_edges / k; ``rel_dep_depth`` = dep_depth / k; ``max_blast_share`` =
  max_blast_indeg / k; ``max_audit_share`` = max_audit_outdeg / k.

Blast and audit are *direct* degrees, as auditable defines the run features; the transitive
downstream reach of one step is a step-level score (auditable's ``step.blast``), not a run
feature. Two extra columns are not in any feature group: ``max_span`` (the longest reach back of any
dependency, dst - src) and ``mean_span`` (mean per-step span over the prefix, a step without
dependencies counting 0), the "dep-span (online)" LIVE entrant.

Feature groups (keys of ``FEATURE_GROUPS``), nested as in auditable:
``size`` = flat (4 columns); ``size+deps`` = flat + dep_dens + dep_shape (auditable's
``flatdep``, 8); ``full`` = flat + exec + dep (auditable's ``full``, 12). Note that ``full``
is not a superset of ``size+deps``: like the published board it reads the raw dependency
counts, not their per-step shares.

Prefix: the first ``ceil(fraction * n_steps)`` steps (at least 1), so a 25% prefix of a 4-step
run has 1 step rather than none, and ``fraction = 1`` is always the whole run. The population
is the slice's runs with outcome success or failure (``y = 1`` for failure; unknown outcomes
cannot be scored) and at least ``min_steps`` steps.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import Query

FLAT: tuple[str, ...] = ("n_steps", "n_tool_calls", "n_decisions", "n_agents")
EXEC: tuple[str, ...] = ("max_agent_outdeg", "agent_gini", "n_agent_transitions", "agent_recurrence")
DEP: tuple[str, ...] = ("n_dep_edges", "dep_depth", "max_blast_indeg", "max_audit_outdeg")
DEP_SHAPE: tuple[str, ...] = ("dep_edges_per_step", "rel_dep_depth", "max_blast_share", "max_audit_share")

FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "size": FLAT,
    "size+deps": FLAT + DEP_SHAPE,
    "full": FLAT + EXEC + DEP,
}

# Columns of every RunFeatures table: each feature group's columns plus the span summaries.
FEATURE_COLUMNS: tuple[str, ...] = FLAT + EXEC + DEP + DEP_SHAPE + ("max_span", "mean_span")


@dataclass(frozen=True)
class RunFeatures:
    """Features of one prefix fraction for the detection population, rows ordered by run_id."""

    run_ids: np.ndarray  # object array of run ids
    y: np.ndarray  # 1 = failed run, 0 = succeeded
    table: pd.DataFrame  # FEATURE_COLUMNS plus run_steps and prefix_steps, one row per run
    fraction: float

    def __len__(self) -> int:
        return len(self.run_ids)

    def matrix(self, group: str) -> np.ndarray:
        """The (runs x columns) float matrix of one feature group of ``FEATURE_GROUPS``."""
        if group not in FEATURE_GROUPS:
            raise KeyError(f"unknown feature group '{group}'; choose one of {list(FEATURE_GROUPS)}.")
        return self.table.loc[:, list(FEATURE_GROUPS[group])].to_numpy(dtype=float)


# Runs per read of the features: a query over a batch of runs holds that batch's steps and edges
# (about 92,000 steps of simulated MAADBench), so the boards' memory is one batch's whatever the
# population; smaller batches were also faster (10,000 runs: 4.9 s for 100,000 runs, 50,000: 11 s).
BATCH_RUNS = 10_000


def prefix_features(
    query: Query,
    corpus: str,
    slice: Mapping[str, Any] | None = None,
    fraction: float = 1.0,
    min_steps: int = 1,
    batch_runs: int = BATCH_RUNS,
) -> RunFeatures:
    """Features of the first ceil(fraction * n_steps) steps of every run in the population.

    ``slice`` is the shared slice (see queries.slice_params); its corpus filter is replaced
    by ``corpus``, because a board is computed on one corpus at a time. Read ``batch_runs`` runs
    at a time (a run's features are its own), in run id order.
    """
    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"prefix fraction must be in (0, 1], got {fraction!r}.")
    params = {
        "slice": {**dict(slice or {}), "corpus": [corpus]},
        "fraction": float(fraction),
        "min_steps": int(min_steps),
    }
    starts = query("run_prefix_batches", {"slice": params["slice"], "min_steps": int(min_steps),
                                          "batch": int(batch_runs)})["run_id"].tolist()
    if len(starts) <= 1:
        return _assemble(query("run_prefix_features", {**params, "run_from": None, "run_to": None}), float(fraction))
    parts = [_assemble(query("run_prefix_features", {**params, "run_from": lo, "run_to": hi}), float(fraction))
             for lo, hi in zip(starts, starts[1:] + [None])]
    run_ids = np.concatenate([p.run_ids for p in parts])
    y = np.concatenate([p.y for p in parts])
    # Column by column, each column's pieces let go as it is joined, and the columns kept as
    # they are (copy=False): the batches and the whole table are then held together one column
    # at a time, not twice over (pd.concat, then a consolidating copy).
    pieces = {name: [p.table[name].to_numpy() for p in parts] for name in parts[0].table.columns}
    del parts
    table = pd.DataFrame({name: np.concatenate(pieces.pop(name)) for name in list(pieces)}, copy=False)
    return RunFeatures(run_ids, y, table, float(fraction))


def _assemble(table: pd.DataFrame, fraction: float) -> RunFeatures:
    k = table["prefix_steps"].to_numpy(dtype=np.int64)
    run_of_edge, src, dst = _edge_arrays(table)
    depth = dependency_depth(k, run_of_edge, src, dst)

    table = table.drop(columns=["dep_src", "dep_dst"])
    table["dep_depth"] = depth
    steps = table["n_steps"].to_numpy(dtype=float)
    # k >= 1 for every row (the query guarantees it), so the shares never divide by zero.
    table["dep_edges_per_step"] = table["n_dep_edges"] / steps
    table["rel_dep_depth"] = depth / steps
    table["max_blast_share"] = table["max_blast_indeg"] / steps
    table["max_audit_share"] = table["max_audit_outdeg"] / steps
    # The table holds what the entrants read, as floats: the run ids and outcomes are the
    # arrays beside it (strings in the table too were a second copy of a million of them).
    features = pd.DataFrame({col: table[col].to_numpy(dtype=float) for col in FEATURE_COLUMNS})
    features["run_steps"] = table["run_steps"].to_numpy(dtype=np.int64)
    features["prefix_steps"] = k
    return RunFeatures(
        run_ids=table["run_id"].to_numpy(dtype=object),
        y=(table["outcome"] == "failure").to_numpy(dtype=np.int64),
        table=features,
        fraction=fraction,
    )


def _edge_arrays(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flatten the per-run prefix edge lists into (run row, src, dst) arrays."""
    counts = np.fromiter((len(v) for v in table["dep_src"]), dtype=np.int64, count=len(table))
    if not counts.sum():
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    run_of_edge = np.repeat(np.arange(len(counts)), counts)
    src = np.concatenate([np.asarray(v, dtype=np.int64) for v in table["dep_src"]])
    dst = np.concatenate([np.asarray(v, dtype=np.int64) for v in table["dep_dst"]])
    return run_of_edge, src, dst


def dependency_depth(
    k: np.ndarray, run_of_edge: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """Edges on the longest dependency chain of each run (0 without edges).

    Every edge points forward in time (src < dst), so the longest chain ending at step d only
    involves earlier steps: processing all runs' edges grouped by their local dst in increasing
    order finalizes every source before it is read. One vectorized update per distinct dst
    position, so the cost is (longest prefix) numpy calls, not (runs x steps) Python steps.
    """
    k = np.asarray(k, dtype=np.int64)
    if k.size == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(k)[:-1]))
    depth = np.zeros(int(k.sum()), dtype=np.int64)
    if src.size:
        order = np.argsort(dst, kind="stable")
        local_dst = dst[order]
        global_src = offsets[run_of_edge[order]] + src[order]
        global_dst = offsets[run_of_edge[order]] + local_dst
        bounds = np.flatnonzero(np.diff(local_dst)) + 1
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, local_dst.size]):
            np.maximum.at(depth, global_dst[lo:hi], depth[global_src[lo:hi]] + 1)
    return np.maximum.reduceat(depth, offsets)
