"""How good a review order is at finding wrong labels: the share of planted flips it puts first.

On a store copy with a seeded share of labels flipped (:mod:`auditatlas.planted_flips`), an
order's figure is the share of the flipped steps among its first ``window`` of the slice's
labeled steps (5% of them, rounded up: a reviewer's first hour, say). A random order finds the
window's share of them on average (5% of the flips in the first 5% of steps); a perfect one
finds them all when there are no more flips than the window holds.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import Query, label_doubt, review_queue

WINDOW = 0.05


def window_steps(labeled: int, window: float = WINDOW) -> int:
    """The first ``window`` of ``labeled`` steps, rounded up."""
    return math.ceil(window * labeled)


def captured(order: pd.DataFrame, flips: pd.DataFrame, steps: int) -> float:
    """The share of ``flips`` (run_id, step_idx) among the first ``steps`` rows of ``order``."""
    planted = set(zip(flips["run_id"].astype(str), flips["step_idx"].astype(int)))
    head = order.head(steps)
    return sum((str(r), int(s)) in planted for r, s in zip(head["run_id"], head["step_idx"])) / len(planted)


@dataclass(frozen=True)
class QueueQuality:
    """Each order's share of the flips in the first ``window_steps`` labeled steps."""

    labeled: int
    flips: int
    window_steps: int
    doubt: float
    label_free_only: float  # the doubt order without its supervised half
    random: list[float]  # one per random-order seed
    doubt_queue: int  # steps in the doubt order
    supervised_cpu_s: float  # the supervised half (features, folds, cleanlab)
    notes: list[str]

    @property
    def random_mean(self) -> float:
        return sum(self.random) / len(self.random)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "random_mean": self.random_mean}


def measure(query: Query, root: str | Path, slice_: Mapping[str, Any] | None, flips: pd.DataFrame,
            random_seeds: Sequence[int] = range(5)) -> QueueQuality:
    """The doubt order (both halves, and the label-free half alone) and the random order under
    ``random_seeds`` against ``flips`` on the store at ``root``."""
    labeled = len(query("review_labeled_steps", {"slice": dict(slice_ or {})}))
    steps = window_steps(labeled)
    started = time.process_time()
    half = label_doubt.supervised_doubt(query, root, slice_)
    cpu = time.process_time() - started
    doubt = review_queue.queue(query, "doubt", slice_, supervised=half.steps)
    free = review_queue.queue(query, "doubt", slice_)
    shuffles = [captured(review_queue.queue(query, "random", slice_, seed), flips, steps) for seed in random_seeds]
    return QueueQuality(labeled, len(flips), steps, captured(doubt, flips, steps), captured(free, flips, steps), shuffles,
                        len(doubt), round(cpu, 2), half.notes)
