"""Published vs recomputed: every golden-board cell the store can regenerate, with its delta.

The golden board (parsed into ``published_values`` at CatchBench ingest) names corpora by the
paper's names. A block is recomputable only when the store holds the same population; the
others are listed with the corpus they need, never silently skipped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import Query
from .board_types import BoardResult

TOLERANCE = 0.0005  # published values carry three decimals

# published corpus name -> (store corpus, why / what it needs)
CORPUS_MAP: dict[str, tuple[str | None, str]] = {
    "catchbench-pre": ("catchbench-pre", "CatchBench PRE release"),
    "whowhen": ("whowhen", "Who&When Algorithm-Generated (126 runs)"),
    "swegym": (None, "SWE-Gym OpenHands runs (376 runs, a balanced resolved/unresolved sample of the public Hugging Face dataset SWE-Gym/OpenHands-Sampled-Trajectories); no auditatlas ingest format reads it yet"),
    "tau": (None, "tau-bench, all 660 runs of the published population; the store's taubench copy is a 100-run subset, a different population"),
    "swegym-gold": (None, "SWE-Gym gold injections (188 runs), not shipped"),
    "tau-bench-gold-v2": (None, "tau-bench named-value gold v2, not shipped"),
}
PRE_SOURCES = ("crewai", "n8n", "mcp", "injecagent", "sweagent", "synthetic")


@dataclass
class Cell:
    board: str
    corpus: str
    entrant: str
    metric: str
    published: float
    recomputed: float | None

    @property
    def delta(self) -> float | None:
        if self.recomputed is None or math.isnan(self.recomputed):
            return None
        return self.recomputed - self.published

    @property
    def matches(self) -> bool:
        return self.delta is not None and abs(self.delta) <= TOLERANCE

    @property
    def status(self) -> str:
        if self.delta is None:
            return "not recomputable (no predictions of this entrant in the store)"
        return "match" if self.matches else "differs"


def reconcile(result: BoardResult, query: Query) -> list[Cell]:
    """Cells of ``result``'s board and corpus that the golden board publishes."""
    frame = query("published", {"board": result.board, "corpus": None})
    ours: dict[tuple[str, str, str], float | None] = {}
    for row in result.rows:
        for metric, value in row.metrics.items():
            ours[(result.corpus, row.entrant, metric)] = value
    for row in result.extra_tables.get("f1_by_source", []):
        for source in PRE_SOURCES:
            if source in row:
                ours[(source, row["entrant"], "f1")] = row[source]
    cells = []
    wanted = {result.corpus} | (set(PRE_SOURCES) if result.board == "pre" else set())
    for rec in frame.to_dict(orient="records"):
        if rec["corpus"] not in wanted:
            continue
        key = (rec["corpus"], rec["entrant"], rec["metric"])
        cells.append(Cell(rec["board"], rec["corpus"], rec["entrant"], rec["metric"], float(rec["value"]), ours.get(key)))
    return cells


def missing_blocks(query: Query) -> list[dict[str, str]]:
    """Published blocks the store cannot recompute, and the corpus each one needs."""
    frame = query("published_blocks")
    out = []
    for rec in frame.to_dict(orient="records"):
        if rec["corpus"] in PRE_SOURCES:
            continue
        store_corpus, what = CORPUS_MAP.get(rec["corpus"], (None, f"corpus '{rec['corpus']}', not known to Audit Atlas"))
        if store_corpus is None:
            out.append({"board": rec["board"], "corpus": rec["corpus"], "cells": int(rec["cells"]), "needs": what})
    return out
