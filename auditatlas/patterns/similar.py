"""Steps like this one: the k steps of the slice most similar to a step (see the package docstring)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..analyses import Query
from ..analyses.relabel import chosen_labels, is_released
from ..errors import AtlasError
from . import DEFAULT_K, MAX_K
from .vectors import StepVectors

# The similarity's terms and their weights (they add up to 1: identical steps score 1).
WEIGHTS = {"text": 0.6, "action": 0.2, "agent": 0.1, "position": 0.05, "size": 0.05}


@dataclass
class SimilarSteps:
    anchor: dict[str, Any]  # run_id, step_idx, corpus, backbone, action, agent, label
    neighbours: pd.DataFrame  # rank, run_id, step_idx, backbone, action, agent, label, similarity, text_similarity
    scores: pd.DataFrame  # set_id, run_id, step_idx, score: every step-level set's score for each neighbour
    summary: str

    def to_json(self) -> dict[str, Any]:
        by_step: dict[tuple[str, int], dict[str, float]] = {}
        for row in self.scores.itertuples(index=False):
            by_step.setdefault((row.run_id, int(row.step_idx)), {})[row.set_id] = float(row.score)
        rows = []
        for row in self.neighbours.to_dict("records"):
            row = {k: _plain(v) for k, v in row.items()}
            row["scores"] = by_step.get((row["run_id"], int(row["step_idx"])), {})
            rows.append(row)
        return {"anchor": {k: _plain(v) for k, v in self.anchor.items()}, "summary": self.summary,
                "weights": WEIGHTS, "neighbours": rows}


def _plain(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if np.isnan(value) else round(float(value), 6)
    return value


def anchor_row(vectors: StepVectors, run_id: str, step_idx: int) -> int:
    """The anchor's row; one sentence naming it when the store has no such run or step."""
    row = vectors.row_of(run_id, step_idx)
    if row is not None:
        return row
    if not vectors.has_run(run_id):
        raise AtlasError(f"The store holds no run '{run_id}'.")
    pos = int(np.searchsorted(vectors.run_ids, run_id))
    n = int(vectors.run_start[pos + 1] - vectors.run_start[pos])
    raise AtlasError(f"Run '{run_id}' has no step {step_idx} (its steps are 0 to {n - 1}).")


# Rows scored per block (``nearest``): a few float32 buffers of this length stay
# in the CPU's cache, so each term is one pass over memory, not a 9.3M-row temporary.
BLOCK = 1 << 16


@dataclass(frozen=True)
class Anchor:
    """The anchor's step features, which every other row's are compared with."""
    action: int
    agent: int
    position: np.float32
    size: np.float32
    has_size: bool

    @classmethod
    def of(cls, vectors: StepVectors, row: int) -> Anchor:
        step = vectors.step
        return cls(int(step["action"][row]), int(step["agent"][row]), np.float32(step["position"][row]),
                   np.float32(step["size"][row]), bool(step["has_size"][row]))


def score(anchor: Anchor, text: np.ndarray, step: Mapping[str, np.ndarray], rows: slice | np.ndarray) -> np.ndarray:
    """The similarity (float32) of ``rows`` (a block or a list of rows) whose text cosines are
    ``text``: one formula for every path, so a row scores the same whichever path reads it."""
    total = np.float32(WEIGHTS["text"]) * np.asarray(text, dtype=np.float32)
    if anchor.action >= 0:
        total += np.float32(WEIGHTS["action"]) * (step["action"][rows] == anchor.action)
    if anchor.agent >= 0:
        total += np.float32(WEIGHTS["agent"]) * (step["agent"][rows] == anchor.agent)
    gap = np.abs(step["position"][rows] - anchor.position)
    total += np.float32(WEIGHTS["position"]) * (np.float32(1.0) - gap)
    if anchor.has_size:
        # Only steps whose size is recorded too: a missing count is not a small one.
        gap = np.abs(step["size"][rows] - anchor.size)
        np.negative(gap, out=gap)
        np.exp(gap, out=gap)
        gap *= step["has_size"][rows]
        total += np.float32(WEIGHTS["size"]) * gap
    return total


def top_k(rows: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions in ``rows`` of the ``k`` highest ``scores``, highest first; ties go to the
    lower row, at the cut as well (the answer never depends on the order rows were read in)."""
    if len(rows) > k:
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        above = np.flatnonzero(scores > cut)
        level = np.flatnonzero(scores == cut)
        level = level[np.argsort(rows[level], kind="stable")][: k - len(above)]
        keep = np.concatenate((above, level))
    else:
        keep = np.arange(len(rows))
    return keep[np.lexsort((rows[keep], -scores[keep]))]


class Best:
    """The k best rows offered so far (``top_k``'s order), so rows can be scored a block at a time."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.rows = np.empty(0, dtype=np.int64)
        self.scores = np.empty(0, dtype=np.float32)

    @property
    def cut(self) -> float:
        """What a row has to beat to enter: the k-th score once k are held (an equal score loses
        when rows are offered in ascending order), else nothing."""
        return float(self.scores[-1]) if len(self.rows) == self.k else -np.inf

    def offer(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Rows in ascending order, each above every row offered before."""
        if len(self.rows) == self.k:
            beats = scores > self.cut
            rows, scores = rows[beats], scores[beats]
        if len(rows):
            rows = np.concatenate((self.rows, rows))
            scores = np.concatenate((self.scores, scores))
            keep = top_k(rows, scores, self.k)
            self.rows, self.scores = rows[keep], scores[keep]


def nearest(vectors: StepVectors, row: int, in_slice: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` rows of the runs ``in_slice`` (a mask over ``vectors.runs``) most similar to
    ``row`` (itself left out): their rows, similarities and text cosines, most similar first.

    Exact. The text cosines come from the inverted index (only the postings of the anchor's
    words, in a compiled loop); then every row is scored, a cache-sized block at a time, and
    only the rows above the k-th best so far are kept. Scoring whole blocks and not only the
    rows sharing a word: templated trace text makes most rows share one (measured at 100,000
    rooms, gathering them cost more than scoring all). Memory: the text cosines (4 bytes a
    row) and a few buffers of ``BLOCK`` rows, whatever k and the slice.
    """
    anchor = Anchor.of(vectors, row)
    words = vectors.text_rows(np.array([row]))
    text = vectors.text_scores(words.indices, words.data)
    best = _scan(anchor, vectors, text, row, in_slice, bool(in_slice.all()), k)
    return best.rows, best.scores, text[best.rows]


def _scan(anchor: Anchor, vectors: StepVectors, text: np.ndarray, row: int, in_slice: np.ndarray,
          everyone: bool, k: int) -> Best:
    """The k best rows, scoring every row a block at a time in the rows' order."""
    step = vectors.step
    best = Best(k)
    for lo in range(0, vectors.n_rows, BLOCK):
        block = slice(lo, min(lo + BLOCK, vectors.n_rows))
        total = score(anchor, text[block], step, block)
        if not everyone:
            total[~in_slice[step["run_pos"][block]]] = -np.inf
        if lo <= row < block.stop:
            total[row - lo] = -np.inf
        found = np.flatnonzero(total > best.cut)  # most rows of most blocks fall here
        best.offer(found + lo, total[found])
    return best


def similar_steps(vectors: StepVectors, query: Query, run_id: str, step_idx: int,
                  slice_: Mapping[str, Any] | None = None, k: int = DEFAULT_K) -> SimilarSteps:
    """The ``k`` steps of ``slice_`` most similar to step ``step_idx`` of ``run_id`` (the step
    itself left out), most similar first; ties in the order of the store's rows."""
    if not 1 <= k <= MAX_K:
        raise AtlasError(f"k must be from 1 to {MAX_K}, not {k}.")
    row = anchor_row(vectors, run_id, int(step_idx))
    in_slice = vectors.run_mask(slice_)
    candidates = int(np.diff(vectors.run_start)[in_slice].sum()) - int(in_slice[vectors.step["run_pos"][row]])
    if candidates == 0:
        raise AtlasError("This slice holds no other step to compare with; widen the filters in the sidebar.")
    top, total, text = nearest(vectors, row, in_slice, min(k, candidates))
    neighbours = vectors.keys(top)
    neighbours.insert(0, "rank", np.arange(1, len(top) + 1))
    neighbours["similarity"] = total.astype(np.float64).round(4)
    neighbours["text_similarity"] = text.astype(np.float64).round(4)
    anchor_keys = vectors.keys(np.array([row]))
    if not is_released(slice_):  # the vectors hold the released labels
        neighbours["label"] = chosen_labels(query, slice_, neighbours)
        anchor_keys["label"] = chosen_labels(query, slice_, anchor_keys)
    anchor = anchor_keys.iloc[0].to_dict()
    scores = step_scores(query, neighbours)
    return SimilarSteps(anchor, neighbours, scores, summary_line(neighbours))


def step_scores(query: Query, steps: pd.DataFrame) -> pd.DataFrame:
    """Every step-level prediction set's score for each of ``steps`` (run_id, step_idx)."""
    runs = [str(r) for r in steps["run_id"]]
    return query("pattern_step_scores", {"runs": runs, "steps": [int(s) for s in steps["step_idx"]],
                                         "run_ids": sorted(set(runs))})


def summary_line(neighbours: pd.DataFrame) -> str:
    """"12 of the 20 nearest are labeled anomalies; 9 from DeepSeek-R1" (the most common backbone)."""
    n = len(neighbours)
    anomalies = int((neighbours["label"] == 1).sum())
    unlabeled = int(neighbours["label"].isna().sum())
    parts = [f"{anomalies} of the {n} nearest {'is a labeled anomaly' if anomalies == 1 else 'are labeled anomalies'}"]
    if unlabeled:
        parts[0] += f" ({unlabeled} unlabeled)"
    backbones = neighbours["backbone"].dropna().astype(str).value_counts()
    if len(backbones):
        # The most common backbone; ties by name, so the line is the same on every run.
        top = sorted(backbones.items(), key=lambda item: (-item[1], item[0]))[0]
        parts.append(f"{top[1]} from {top[0]}")
    return "; ".join(parts)
