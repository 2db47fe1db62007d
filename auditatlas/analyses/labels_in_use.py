"""Which labels a view reads, in one line every view shows: "Labels: reviewed (37 steps reviewed, 5 changed)".

The label choice (``labels=released|reviewed|agreed``) travels in the slice mapping every page
passes on (``auditatlas.view_state.state_fields.LABELS``); the query layer reads the chosen labels
(``queries/labels.py``). This module only counts how far the verdicts reach into the slice and
words it, so a reader always knows what the numbers below rest on.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..schema import DEFAULT_LABELS
from ..view_state.state_fields import labels_of

Query = Callable[..., pd.DataFrame]


@dataclass(frozen=True)
class ReviewReach:
    """The slice's steps holding a latest verdict, and how those verdicts stand to the release."""

    choice: str
    reviewed: int
    changed: int  # the verdict gives another label than the release (anomaly / normal)
    agreed: int  # the verdict equals the released label
    unsure: int


def reach(query: Query, slice_: Mapping[str, Any] | None) -> ReviewReach:
    """Count the slice's reviewed steps against the release (read under the released labels,
    whatever the view's choice: the comparison is with the release)."""
    released = {**(slice_ or {}), "labels": DEFAULT_LABELS}
    row = query("label_review_counts", {"slice": released}).iloc[0]
    return ReviewReach(labels_of(slice_), int(row["reviewed_steps"]), int(row["changed_steps"]),
                       int(row["agreed_steps"]), int(row["unsure_steps"]))


def caption(counts: ReviewReach) -> str:
    """The one caption line (plain text: our words and numbers only)."""
    n = counts.reviewed
    steps = f"{n:,} step{'' if n == 1 else 's'} reviewed"
    if counts.choice == "reviewed":
        unsure = f", {counts.unsure:,} unsure kept as released" if counts.unsure else ""
        return f"Labels: reviewed ({steps}, {counts.changed:,} changed{unsure})."
    if counts.choice == "agreed":
        return (f"Labels: agreed ({steps}, {counts.agreed:,} agree with the release; every other step "
                "counts as unlabeled).")
    if n == 0:
        return "Labels: released (no step of this slice reviewed)."
    return (f"Labels: released ({steps}, {counts.changed:,} of them to another label; "
            "choose reviewed or agreed in the sidebar to use the verdicts).")


def caption_for(query: Query, slice_: Mapping[str, Any] | None) -> str:
    """:func:`caption` of the slice's counts."""
    return caption(reach(query, slice_))


# What a board's truth is, by the granularity of its task, when it is not a step label.
BOARD_TRUTHS = {"run": "run outcomes", "config": "capability labels"}


def board_note(slice_: Mapping[str, Any] | None, granularity: str) -> str | None:
    """What the label choice does to a board whose task has ``granularity`` (step, run, config);
    None under the released labels. A step board is recomputed under the chosen labels (its
    published values rest on the released ones); the others' truth is no step label."""
    choice = labels_of(slice_)
    if choice == DEFAULT_LABELS:
        return None
    if granularity == "step":
        return (f"Recomputed under the {choice} labels; the published values rest on the released labels, so a "
                "recomputed value that differs from its published one is expected here.")
    truth = BOARD_TRUTHS.get(granularity, f"{granularity}-level labels")
    return f"This board's truth is {truth}, which no step verdict changes: it is the same under every label choice."
