"""The review orders' votes: per step of a slice, how many step-level prediction sets score it
(``n_sets``) and how many rank it in their top decile (``n_top``).

A set's top decile: within the steps of the slice it scores, a rank (1 = highest score, ties
share a rank) of at most k = ceil(10% of them); that is a score of at least the set's k-th
highest, ties counted. A step scored twice by a set keeps its highest score; a prediction
counts when its step is one of the run's (its index below the run's ``n_steps``).

Computed a set at a time over arrays indexed by step number (the slice's steps numbered
0..N-1 in run id order, ``queries/sql/_review_step_numbers.sql``): the peak is one set's scores
and two counters per step. In one query, grouping every scored step of every set held 5.6 GB at
a million rooms with three sets, and DuckDB could not spill it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import Query

# A step's label where it has none, in :attr:`StepFlags.labels`.
UNLABELED = -1


@dataclass(frozen=True)
class StepFlags:
    """The votes of a slice's steps, indexed by step number."""

    # Steps of each run of the slice, in run number order.
    run_steps: np.ndarray
    n_sets: np.ndarray
    n_top: np.ndarray

    def keys(self, step_no: np.ndarray) -> pd.DataFrame:
        """Step numbers as (run_no, step_idx) with their counts: the frame the review orders'
        queries join to the slice's steps."""
        first = np.cumsum(self.run_steps) - self.run_steps
        run_no = np.searchsorted(first, step_no, side="right") - 1
        return pd.DataFrame({"run_no": run_no.astype(np.int64), "step_idx": (step_no - first[run_no]).astype(np.int64),
                             "n_sets": self.n_sets[step_no], "n_top": self.n_top[step_no]})


def step_flags(query: Query, slice_: Mapping[str, Any] | None, supervisions: Iterable[str]) -> StepFlags:
    """The votes of the step-level sets of ``supervisions`` on the steps of ``slice_``."""
    slice_ = dict(slice_ or {})
    run_steps = query("review_run_steps", {"slice": slice_})["n_steps"].to_numpy(np.int64)
    total = int(run_steps.sum())
    n_sets = np.zeros(total, np.int32)
    n_top = np.zeros(total, np.int32)
    for set_id in query("review_flag_sets", {"supervisions": list(supervisions)})["set_id"]:
        scores = query("review_set_scores", {"slice": slice_, "set_id": set_id})
        step_no, score = scores["step_no"].to_numpy(np.int64), scores["score"].to_numpy(np.float64)
        del scores
        if not len(step_no):
            continue
        best = np.full(total, -np.inf)
        np.maximum.at(best, step_no, score)
        scored = np.zeros(total, bool)
        scored[step_no] = True
        del step_no, score
        values = best[scored]
        k = -(-len(values) // 10)  # ceil(10%), in integers as DuckDB's decimal arithmetic had it
        cut = np.partition(values, len(values) - k)[len(values) - k]
        del values
        n_sets += scored
        n_top += scored & (best >= cut)
    return StepFlags(run_steps, n_sets, n_top)


def step_labels(query: Query, slice_: Mapping[str, Any] | None, total: int) -> np.ndarray:
    """The slice's labels by step number (:data:`UNLABELED` where a step has none), under the
    slice's label choice."""
    labels = np.full(total, UNLABELED, np.int8)
    labeled = query("review_step_labels", {"slice": dict(slice_ or {})})
    labels[labeled["step_no"].to_numpy(np.int64)] = labeled["label"].to_numpy(np.int8)
    return labels
