"""The review page's queues: the steps of a slice in the order a reviewer should read them.

Each order is one named query (``queries/sql/review_*.sql``) plus, for ``random``, a seeded
shuffle here. An order with no step says why in one sentence (:func:`why_empty`). A queue is a frame of step keys (corpus, run_id, step_idx, label) in order, plus
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

from ..graph import DECISIVE_SOURCE
from ..views.fields import on_release
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
    Order("judges", "Judges against the human",
          "Who&When runs (steps labelled by a human decisive step) where most of the LLM judges that picked a step "
          "on the run picked another one than the human. A judge's pick: its released top step, else the step it "
          "ranks first; a judge that abstained picks nothing. The step to review is the human decisive step. Most "
          "doubtful first: the share of judges against the human, then how many of them agree on one other step."),
)}


def queue(query: Query, order: str, slice_: Mapping[str, Any] | None, seed: int = 0) -> pd.DataFrame:
    """The steps of ``slice_`` in review order ``order`` (one of ORDERS). The orders question
    the released labels, whatever the slice's label choice."""
    slice_ = on_release(slice_)
    if order == "random":
        return shuffled(query("review_labeled_steps", {"slice": dict(slice_ or {})}), seed)
    if order == "doubt":
        return query("review_doubt", {"slice": dict(slice_ or {}), "supervisions": LABEL_FREE})
    if order == "flagged":
        return query("review_flagged", {"slice": dict(slice_ or {}), "supervisions": EVERY_SUPERVISION})
    if order == "judges":
        return query("review_judges", {"slice": dict(slice_ or {}), "decisive_source": DECISIVE_SOURCE})
    raise KeyError(f"no review order '{order}'; orders: {', '.join(ORDERS)}")


def shuffled(steps: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``steps`` (in run, step order) permuted by numpy's generator seeded with ``seed``:
    the same seed gives the same order on every machine and numpy release that keeps PCG64."""
    order = np.random.default_rng(seed).permutation(len(steps))
    return steps.iloc[order].reset_index(drop=True)


def why_empty(query: Query, order: str, slice_: Mapping[str, Any] | None) -> str:
    """One sentence: why order ``order`` holds no step of ``slice_``."""
    title = ORDERS[order].title.lower()
    slice_ = on_release(slice_)
    if order != "judges":
        return f"No step of this slice is in the {title} order (its definition is above)."
    held = query("review_judges_coverage", {"slice": dict(slice_ or {}), "decisive_source": DECISIVE_SOURCE}).iloc[0]
    if int(held["store_runs"]) == 0:
        return ("The store holds no Who&When corpus (no run has a step labelled by a human decisive step), so the "
                "judges have no human to disagree with; add one with `auditatlas ingest whowhen PATH`.")
    if int(held["slice_runs"]) == 0:
        return "No run of this slice has a human decisive step (Who&When's runs do); widen the slice to include them."
    if int(held["judge_sets"]) == 0:
        return ("No LLM judge's prediction set scores the Who&When runs, so there is no pick to set against the "
                "human one (the CatchBench release adds them: `auditatlas ingest catchbench`).")
    return (f"On every Who&When run of this slice, most judges with a pick picked the human decisive step, so no "
            f"step is in the {title} order.")
