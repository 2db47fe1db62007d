"""Steps like this one: the k steps of the slice most similar to a step (see the package docstring)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..analyses import Query
from ..analyses.relabel import chosen_labels, is_released
from ..errors import AtlasError
from .vectors import StepVectors

# The similarity's terms and their weights (they add up to 1: identical steps score 1).
WEIGHTS = {"text": 0.6, "action": 0.2, "agent": 0.1, "position": 0.05, "size": 0.05}
DEFAULT_K = 20
MAX_K = 200


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


def similarity(vectors: StepVectors, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the store: the similarity to ``row`` and its text part (cosine)."""
    anchor = vectors.text_rows(np.array([row]))
    text = vectors.text_scores(anchor.indices, anchor.data)
    step = vectors.step
    total = WEIGHTS["text"] * text
    total += WEIGHTS["action"] * (np.asarray(step["action"]) == step["action"][row]).astype(np.float32) \
        * (step["action"][row] >= 0)
    total += WEIGHTS["agent"] * (np.asarray(step["agent"]) == step["agent"][row]).astype(np.float32) \
        * (step["agent"][row] >= 0)
    total += WEIGHTS["position"] * (1.0 - np.abs(np.asarray(step["position"]) - step["position"][row]))
    if step["has_size"][row]:
        # Only steps whose size is recorded too: a missing count is not a small one.
        gap = np.abs(np.asarray(step["size"]) - step["size"][row])
        total += WEIGHTS["size"] * np.exp(-gap) * np.asarray(step["has_size"])
    return total, text


def similar_steps(vectors: StepVectors, query: Query, run_id: str, step_idx: int,
                  slice_: Mapping[str, Any] | None = None, k: int = DEFAULT_K) -> SimilarSteps:
    """The ``k`` steps of ``slice_`` most similar to step ``step_idx`` of ``run_id`` (the step
    itself left out), most similar first; ties in the order of the store's rows."""
    if not 1 <= k <= MAX_K:
        raise AtlasError(f"k must be from 1 to {MAX_K}, not {k}.")
    row = anchor_row(vectors, run_id, int(step_idx))
    mask = vectors.slice_mask(slice_)
    mask[row] = False
    candidates = int(mask.sum())
    if candidates == 0:
        raise AtlasError("This slice holds no other step to compare with; widen the filters in the sidebar.")
    total, text = similarity(vectors, row)
    total[~mask] = -np.inf
    k = min(k, candidates)
    top = np.argpartition(-total, k - 1)[:k]
    top = top[np.lexsort((top, -total[top]))]
    neighbours = vectors.keys(top)
    neighbours.insert(0, "rank", np.arange(1, k + 1))
    neighbours["similarity"] = total[top].astype(np.float64).round(4)
    neighbours["text_similarity"] = text[top].astype(np.float64).round(4)
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
