"""The Review page's content apart from the queue: what the page is, and its Agreement section
(kappa between reviewers and against the release, the confusion table per label process, the
released labels' error rate from the random order). The queue is a reviewer's working view, not
a result: the app draws it between the intro and the agreement, the export leaves it out."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses import review_agreement as ra
from ..analyses.board_kept import Remember
from ..view_state.state_fields import describe_slice
from . import blocks as b

Query = Callable[..., pd.DataFrame]


def intro(slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.note("Steps of the slice ({}), one at a time. A verdict is stored at once as a label process of its own "
                   "(the newest verdict on a step counts; every earlier one is kept). The queues and the agreement "
                   "figures question the released labels, whatever the label choice in the sidebar.",
                   describe_slice(slice_))]


def agreement(query: Query, slice_: Mapping[str, Any], seed: int) -> list[b.Block]:
    """The agreement figures; the error rate rests on the seed's random sample alone (never
    pooled across seeds)."""
    result = ra.agreement(query, dict(slice_), int(seed))
    out: list[b.Block] = [b.Heading("Agreement"), b.Text.plain(ra.EXPLAINS, "note")]
    out += [b.Text.plain(n, "info") for n in result.notes]
    out.append(b.say("**Between reviewers**"))
    out.append(b.Table(ra.pairs_frame(result), "agreement-pairs") if result.pairs else
               b.note("Kappa between reviewers needs two reviewers on the same steps."))
    out.append(b.say("**Review against release, per label process**"))
    if result.release:
        out += [b.Table(ra.release_frame(result), "agreement-release"),
                b.Table(ra.confusion_frame(result), "agreement-confusion",
                        caption="Released against reviewed (the latest verdict per step), in steps:")]
    else:
        out.append(b.note("No verdict on a step with a released label yet."))
    out.append(b.say("**Released labels' error rate (random order only)**"))
    out += [b.Text.plain(ra.error_sentence(rate)) for rate in result.error_rates]
    if result.error_rates:
        out.append(b.Table(ra.error_frame(result), "agreement-error-rate"))
    return out


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    return intro(link.slice) + agreement(query, link.slice, link.values["seed"])
