"""Seeded train/test splits that never put a room (or a run) on both sides.

MAADBench splits room-disjoint: the group of a run is (task, room, difficulty), and 20% of
the groups go to test (``GroupShuffleSplit``). The same room is played under several
backbones and temperatures, so splitting runs (or steps) at random would test a detector on
rooms it was trained on. Corpora without rooms group by run: a run's steps stay together.
Groups carry their corpus, so equal room names of two corpora never merge.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

TEST_SIZE = 0.2
ROOM_KEYS = "task_id+room_id+difficulty"


def run_groups(runs: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Group key of every run, and a description of the grouping for provenance.

    A run with a room is grouped by (corpus, task_id, room_id, difficulty); a run without
    one by its run_id.
    """
    has_room = runs["room_id"].notna().to_numpy()
    rooms = ("room|" + runs["corpus"].astype(str) + "|" + runs["task_id"].astype(str) + "|"
             + runs["room_id"].astype(str) + "|" + runs["difficulty"].astype(str))
    keys = np.where(has_room, rooms.to_numpy(dtype=object), ("run|" + runs["run_id"].astype(str)).to_numpy(dtype=object))
    if has_room.all():
        how = ROOM_KEYS
    elif not has_room.any():
        how = "run_id"
    else:
        how = f"{ROOM_KEYS} (run_id for runs without a room)"
    return keys, how


@dataclass(frozen=True)
class Split:
    """Which runs are test runs under one seed, with what provenance needs to say about it."""

    test_run: np.ndarray  # bool per run (rows of StepFeatures.runs)
    seed: int
    groups: str
    n_groups: int
    test_size: float

    def info(self, step_test: np.ndarray | None = None) -> dict[str, Any]:
        out = {
            "kind": "GroupShuffleSplit",
            "groups": self.groups,
            "test_size": self.test_size,
            "seed": self.seed,
            "n_groups": self.n_groups,
            "n_train_runs": int((~self.test_run).sum()),
            "n_test_runs": int(self.test_run.sum()),
        }
        if step_test is not None:
            out["n_train_steps"] = int((~step_test).sum())
            out["n_test_steps"] = int(step_test.sum())
        return out


def group_split(runs: pd.DataFrame, seed: int, test_size: float = TEST_SIZE) -> Split:
    """Room-disjoint (else run-disjoint) split of ``runs``: ``test_size`` of the groups to test."""
    from sklearn.model_selection import GroupShuffleSplit

    keys, how = run_groups(runs)
    codes, uniques = pd.factorize(keys)
    test = np.zeros(len(runs), dtype=bool)
    if len(uniques) >= 2:
        splitter = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=int(seed))
        _, test_idx = next(splitter.split(np.zeros(len(runs)), groups=codes))
        test[test_idx] = True
    return Split(test_run=test, seed=int(seed), groups=how, n_groups=len(uniques), test_size=test_size)
