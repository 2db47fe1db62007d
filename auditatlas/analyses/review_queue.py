"""The review page's queues: the steps of a slice in the order a reviewer should read them.

Each order is one named query (``queries/sql/review_*.sql``) plus, for ``random``, a seeded
shuffle here, and for ``doubt`` and ``flagged`` the sets' votes (:mod:`.review_flags`) handed to
the query as the steps to order. An order with no step says why in one sentence
(:func:`why_empty`). A queue is a frame of step keys (corpus, run_id, step_idx, label) in order,
plus the signal columns its order rests on; the page walks it by position.

The doubt order has two halves:

- the **supervised half** (:mod:`.label_doubt`): each labeled step's out-of-fold probability of
  its own label from a classifier fit on the other rooms' labels, ranked by cleanlab
  (self-confidence), with cleanlab's ``find_label_issues`` saying which steps are label issues.
  Computed here from the step features, not read from the stored supervised prediction sets:
  those were fit on the labels they would be judging (their scores are out of sample on their
  test split only), so they agree with a wrong label wherever they were trained on it;
- the **label-free half**: the prediction sets that never saw a label (supervision
  ``unsupervised`` or ``zero-shot``) contradicting it: a labeled normal step most of them rank
  in their top decile, a labeled anomaly none of them does.

A step is in the queue when either half doubts it; most doubtful first by the supervised half
(lowest self-confidence) where it could be computed, else by the label-free share. Why the
supervised half leads: on the simulated corpus with a seeded 5% of labels flipped
(``bench/review_queue.py``), the label-free half alone put 24% of the flips in the first 5% of
steps (random: 5%), the supervised half 67%; adding the label-free vote to the supervised doubt
as a weighted sum did not help (66% falling to 31% as its weight grew), so it leads and the
label-free half adds the steps it alone doubts.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..graph import DECISIVE_SOURCE
from ..view_state.state_fields import filters_any, on_release
from . import Query, label_doubt, review_flags

LABEL_FREE = ["unsupervised", "zero-shot"]
EVERY_SUPERVISION = ["unsupervised", "one-class", "supervised", "zero-shot"]
KEY_COLUMNS = ["corpus", "run_id", "step_idx", "label"]
# The doubt order's supervised half when there is none: its columns, no row.
NO_SUPERVISED_HALF = pd.DataFrame({"run_id": pd.Series(dtype=str), "step_idx": pd.Series(dtype="int64"),
                                   "self_confidence": pd.Series(dtype="float64"), "label_issue": pd.Series(dtype=bool)})


@dataclass(frozen=True)
class Order:
    """A review order: its name (the URL's ``queue``), its words on the page, whether it is seeded."""

    name: str
    title: str
    explains: str
    seeded: bool = False


ORDERS: dict[str, Order] = {o.name: o for o in (
    Order("doubt", "Label doubt",
          "Labeled steps whose label the detectors contradict, from two halves. Supervised: "
          + label_doubt.EXPLAINS + ". Label-free: labeled normal steps that most label-free prediction sets "
          "(unsupervised or zero-shot) rank in their top decile, and labeled anomalies that none of them does (a "
          "set's top decile: its highest-scoring 10%, rounded up, of the steps it scores in this slice). A step is "
          "in the queue when either half doubts it. Most doubtful first: the lowest out-of-fold probability of its "
          "label, where the supervised half could be computed; else the share of the label-free sets contradicting "
          "it. The stored supervised prediction sets are left out: fit on these labels, they agree with a wrong "
          "label wherever they were trained on it."),
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


def queue(query: Query, order: str, slice_: Mapping[str, Any] | None, seed: int = 0,
          supervised: Any = None) -> pd.DataFrame:
    """The steps of ``slice_`` in review order ``order`` (one of ORDERS). The orders question
    the released labels, whatever the slice's label choice. ``supervised``: the supervised half
    of label doubt (``label_doubt.supervised_doubt(...).steps``: a pandas or Arrow table, or a
    Parquet file) for the doubt order, of which only the doubted steps are
    joined and sorted in DuckDB (``review_doubt_order.sql``: at a million rooms the half is 9
    million rows); without it, that order rests on the label-free half alone."""
    slice_ = on_release(slice_)
    if order == "random":
        return shuffled(query("review_labeled_steps", {"slice": dict(slice_ or {})}), seed)
    if order == "doubt":
        half = supervised if supervised is not None else NO_SUPERVISED_HALF
        return query("review_doubt_order", {"slice": dict(slice_ or {}), "doubted": _doubted(query, slice_, half)})
    if order == "flagged":
        flags = review_flags.step_flags(query, slice_, EVERY_SUPERVISION)
        labels = review_flags.step_labels(query, slice_, len(flags.n_sets))
        flagged = np.flatnonzero((labels == review_flags.UNLABELED) & (2 * flags.n_top > flags.n_sets))
        return query("review_flagged", {"slice": dict(slice_ or {}), "flagged": flags.keys(flagged)})
    if order == "judges":
        return query("review_judges", {"slice": dict(slice_ or {}), "decisive_source": DECISIVE_SOURCE})
    raise KeyError(f"no review order '{order}'; orders: {', '.join(ORDERS)}")


def _doubted(query: Query, slice_: Mapping[str, Any] | None, half: Any) -> pd.DataFrame:
    """The labeled steps either half doubts, by step number, with what the doubt order sorts
    them by: the label-free half's votes and whether it doubts the step (a labeled normal step
    most label-free sets flag, a labeled anomaly that they score and none flags); the supervised
    half's self-confidence where it has the step, and its label issues (its doubts)."""
    flags = review_flags.step_flags(query, slice_, LABEL_FREE)
    labels = review_flags.step_labels(query, slice_, len(flags.n_sets))
    free = (((labels == 0) & (2 * flags.n_top > flags.n_sets))
            | ((labels == 1) & (flags.n_top == 0) & (flags.n_sets > 0)))
    supervised = query("review_supervised_half", {"slice": dict(slice_ or {}), "supervised": half})
    step_no = supervised["step_no"].to_numpy(np.int64)
    issues = step_no[supervised["label_issue"].to_numpy(bool)]
    doubted = np.union1d(np.flatnonzero(free), issues)
    doubted = doubted[labels[doubted] != review_flags.UNLABELED]
    # The half's rows of the doubted steps: its steps are unique (one row per step it computed).
    place = np.searchsorted(doubted, step_no)
    found = place < len(doubted)
    found[found] = doubted[place[found]] == step_no[found]
    in_half = np.zeros(len(doubted), bool)
    confidence = np.zeros(len(doubted))
    label_issue = np.zeros(len(doubted), bool)
    in_half[place[found]] = True
    confidence[place[found]] = supervised["self_confidence"].to_numpy(np.float64)[found]
    label_issue[place[found]] = supervised["label_issue"].to_numpy(bool)[found]
    del supervised, step_no
    keys = flags.keys(doubted)
    keys["label"] = labels[doubted]
    keys["free_contradicts"] = free[doubted]
    keys["in_half"] = in_half
    keys["self_confidence"] = confidence
    keys["label_issue"] = label_issue
    return keys


KEPT_DOUBT_ORDER = "review/doubt_order"


def kept_doubt_order(query: Query, root: str | Path | None, slice_: Mapping[str, Any] | None,
                     remember: label_doubt.RememberFrame) -> tuple[pd.DataFrame, list[str]]:
    """The doubt order with its supervised half, and the half's notes: for the whole store kept
    per store version beside the half (the view /review opens on; at a million rooms its join is
    seconds), a slice's computed. The half is handed to the query as its kept file."""
    from functools import partial

    def compute() -> tuple[pd.DataFrame, list[str]]:
        half = label_doubt.kept_supervised_doubt(query, root, slice_, partial(remember, as_file=True))
        return queue(query, "doubt", slice_, supervised=half.steps), list(half.notes)

    if filters_any(on_release(slice_)):
        return compute()
    order, notes, _ = remember(KEPT_DOUBT_ORDER, compute)
    return order, list(notes)


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
