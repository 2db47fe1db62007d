"""The review page's queues: the steps of a slice in the order a reviewer should read them.

Each order is one named query (``queries/sql/review_*.sql``) plus, for ``random``, a seeded
shuffle here. A queue is a frame of step keys (corpus, run_id, step_idx, label) in order, plus
the signal columns its order rests on; the page walks it by position.

Why the doubt order uses label-free sets only (supervision ``unsupervised`` or ``zero-shot``):
a set fit on the labels agrees with a wrong label on every step it was trained on, so its
vote says nothing about that label. The supervised half the issue proposes (cleanlab's
``find_label_issues`` over out-of-fold probabilities) is not here yet: the store holds
supervised scores out of sample only for each set's test split, and cleanlab is not a
dependency of the project's environment (adding it is the lead's call, not a page's).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import Query

LABEL_FREE = ["unsupervised", "zero-shot"]
EVERY_SUPERVISION = ["unsupervised", "one-class", "supervised", "zero-shot"]
KEY_COLUMNS = ["corpus", "run_id", "step_idx", "label"]


@dataclass(frozen=True)
class Order:
    """A review order: its name (the URL's ``queue``), its words on the page, whether it is seeded."""

    name: str
    title: str
    explains: str
    seeded: bool = False


ORDERS: dict[str, Order] = {o.name: o for o in (
    Order("doubt", "Label doubt",
          "Labeled normal steps that most label-free prediction sets (unsupervised or zero-shot) rank in their "
          "top decile, and labeled anomalies that none of them does. A set's top decile: its highest-scoring "
          "10% (rounded up) of the steps it scores in this slice. Most doubtful first: the share of the sets "
          "scoring the step that contradict its label, then the number of them. Sets fit on the labels are left "
          "out: they agree with a wrong label wherever they were trained on it."),
    Order("random", "Random sample",
          "A seeded uniform sample of the labeled steps of this slice (every labeled step, in a shuffled order). "
          "It is the only order from which an error rate of the released labels may be estimated: every other "
          "order picks the steps most likely to be wrong.", seeded=True),
    Order("flagged", "Flagged but unlabeled",
          "Unlabeled steps that most step-level prediction sets rank in their top decile (their highest-scoring "
          "10%, rounded up, of the steps they score in this slice), for corpora without labels. The larger share "
          "of sets first, then the number of them."),
)}


def queue(query: Query, order: str, slice_: Mapping[str, Any] | None, seed: int = 0) -> pd.DataFrame:
    """The steps of ``slice_`` in review order ``order`` (one of ORDERS)."""
    if order == "random":
        return shuffled(query("review_labeled_steps", {"slice": dict(slice_ or {})}), seed)
    if order == "doubt":
        return query("review_doubt", {"slice": dict(slice_ or {}), "supervisions": LABEL_FREE})
    if order == "flagged":
        return query("review_flagged", {"slice": dict(slice_ or {}), "supervisions": EVERY_SUPERVISION})
    raise KeyError(f"no review order '{order}'; orders: {', '.join(ORDERS)}")


def shuffled(steps: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``steps`` (in run, step order) permuted by numpy's generator seeded with ``seed``:
    the same seed gives the same order on every machine and numpy release that keeps PCG64."""
    order = np.random.default_rng(seed).permutation(len(steps))
    return steps.iloc[order].reset_index(drop=True)
