"""The Patterns page's tables as shown, built once for the page and its export."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..view_state import explorer_url
from .clusters import FailureClusters
from .similar import SimilarSteps

TEXT_CHARS = 200  # characters of an example step's output shown beside it


def _label(value: Any) -> str:
    return "unlabeled" if pd.isna(value) else ("anomaly" if int(value) == 1 else "normal")


def neighbour_rows(result: SimilarSteps, slice_: Mapping[str, Iterable[Any]] | None = None) -> pd.DataFrame:
    """One row per similar step: its place, run, backbone, label, similarity, every set's score
    (a column per set, blank where the set does not score the step) and its explorer link."""
    frame = result.neighbours.copy()
    frame["label"] = frame["label"].map(_label)
    if not result.scores.empty:
        wide = result.scores.pivot_table(index=["run_id", "step_idx"], columns="set_id", values="score",
                                         aggfunc="first").reset_index()
        wide.columns = [c if c in ("run_id", "step_idx") else f"score {c}" for c in wide.columns]
        frame = frame.merge(wide, on=["run_id", "step_idx"], how="left")
    frame["explorer"] = [explorer_url(r, int(s), slice=slice_) for r, s in zip(frame["run_id"], frame["step_idx"])]
    return frame


def cluster_rows(result: FailureClusters) -> pd.DataFrame:
    """One row per cluster: number, size, top terms, its three largest backbones and actions."""
    def shares(pairs: list[tuple[str, float]]) -> str:
        return ", ".join(f"{name} {share:.0%}" for name, share in pairs[:3])

    return pd.DataFrame([{"cluster": c.number, "steps": c.size, "top terms": " ".join(c.top_terms),
                          "backbones": shares(c.backbones), "actions": shares(c.actions)} for c in result.clusters])


def example_rows(result: FailureClusters, number: int, slice_: Mapping[str, Iterable[Any]] | None = None) -> pd.DataFrame:
    """The three example steps of cluster ``number`` (nearest its centre), their output's start."""
    cluster = next(c for c in result.clusters if c.number == number)
    frame = cluster.examples.copy()
    frame["label"] = frame["label"].map(_label)
    frame["text_out"] = frame["text_out"].fillna("").astype(str).str.slice(0, TEXT_CHARS)
    frame["explorer"] = [explorer_url(r, int(s), slice=slice_) for r, s in zip(frame["run_id"], frame["step_idx"])]
    return frame


def member_rows(result: FailureClusters, number: int, slice_: Mapping[str, Iterable[Any]] | None = None,
                limit: int | None = None) -> pd.DataFrame:
    """The steps of cluster ``number`` in the store's order (the first ``limit``), with links."""
    frame = result.steps_of(number).drop(columns="cluster")
    if limit is not None:
        frame = frame.head(limit)
    frame["label"] = frame["label"].map(_label)
    frame["explorer"] = [explorer_url(r, int(s), slice=slice_) for r, s in zip(frame["run_id"], frame["step_idx"])]
    return frame
