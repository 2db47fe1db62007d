"""The Patterns page's content: the steps like a chosen step, the failure clusters of the
slice's anomalous steps, and the open cluster's examples and steps.

The app draws the run, step, k, seed and cluster pickers between the sections (and the
progress of the step vectors and the clustering); ``page`` calls them in order with the link's
values, for the export.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses.board_kept import Remember
from ..errors import AtlasError
from ..patterns import clusters, similar, tables
from ..progress import Progress
from ..run_labels import names_of, run_label
from ..view_state.state_fields import describe_slice
from . import blocks as b

Query = Callable[..., pd.DataFrame]
MEMBERS_SHOWN = 2000  # a cluster's steps listed on the page (the CSV download has them all)
STEP_LINK = b.Column("explorer", link_text="open step", width="small")


def intro(slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.note("Is this failure a pattern? Steps of the slice ({}) like a chosen step, and the slice's anomalous "
                   "steps in clusters.", describe_slice(slice_))]


def readable(frame: pd.DataFrame, names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Steps read by their run's short label with the Explorer link beside it; the full run id
    (long: it names the room's log folder) moves to the end, to copy."""
    if "run_id" not in frame.columns or "run" in frame.columns:
        return frame
    shown = frame.copy()
    difficulty = shown["difficulty"] if "difficulty" in shown.columns else [None] * len(shown)
    shown.insert(shown.columns.get_loc("run_id"), "run", [run_label(r, d, (names or {}).get(r))
                                                           for r, d in zip(shown["run_id"], difficulty)])
    lead = [c for c in ("rank", "run", "explorer") if c in shown.columns]
    return shown[[*lead, *(c for c in shown.columns if c not in lead and c != "run_id"), "run_id"]]


def _table(frame: pd.DataFrame, name: str, height: int | None = None, shown: int | None = None,
           names: Mapping[str, str] | None = None) -> b.Table:
    """A step table, the first ``shown`` rows on screen, every row in its CSV."""
    view = readable(frame if shown is None else frame.head(shown), names)
    return b.Table(view, name, download=None if shown is None else frame, columns=(STEP_LINK,),
                   height=height or min(38 + 35 * len(view), 600))


def neighbours(found, query: Query, slice_: Mapping[str, Any], values: Mapping[str, Any]) -> list[b.Block]:
    """The k steps of the slice most like the chosen one, or why there are none."""
    if not values["run"]:
        return [b.info("Choose a step: give its run and step above, or open it in the Explorer and follow "
                       "“steps like this one”.")]
    try:
        nearest = similar.similar_steps(found, query, values["run"], int(values["step"] or 0), dict(slice_),
                                        int(values["k"]))
    except AtlasError as exc:
        return [b.Text.plain(str(exc), "warning")]
    rows = tables.neighbour_rows(nearest, slice_)
    return [b.say("**{}**", nearest.summary),
            b.note("Similarity = 0.6 × text cosine (TF-IDF words) + 0.2 same action + 0.1 same agent + 0.05 position "
                   "+ 0.05 size; 1 = the same step."),
            _table(rows, "similar-steps", names=names_of(query, rows["run_id"]))]


def grouped(found, query: Query, slice_: Mapping[str, Any], values: Mapping[str, Any],
            progress: Progress | None = None):
    """The slice's failure clusters for the values' seed and count, or the sentence saying why
    there are none."""
    try:
        return clusters.failure_clusters(found, query, dict(slice_), int(values["seed"]),
                                         n_clusters=int(values["clusters"]), progress=progress)
    except AtlasError as exc:
        return [b.Text.plain(str(exc), "warning")]


def clusters_line(result) -> b.Text:
    values = (len(result.members), result.source, len(result.clusters), result.seed)
    if len(result.members) <= clusters.FIT_ROWS:
        return b.Text("{:,} {} in {} clusters (seed {}).", values)
    # Says what the centres were fitted on (clusters.fit_sample), so the reader knows the partition's basis.
    return b.Text("{:,} {} in {} clusters (seed {}): the centres were fitted on a seeded sample of {:,} of them, and "
                  "every one is in the cluster of its nearest centre.", values + (clusters.FIT_ROWS,))


def cluster_list(result) -> list[b.Block]:
    return [_table(tables.cluster_rows(result), "clusters")]


def open_cluster(result, number: int | None, slice_: Mapping[str, Any]) -> list[b.Block]:
    """The open cluster's examples and steps; a cluster the slice does not have is one sentence."""
    if number is None:
        return []
    if number not in [c.number for c in result.clusters]:
        return [b.warning("The link's cluster {} is not among the {} clusters of this slice; no cluster is open.",
                          number, len(result.clusters))]
    members = tables.member_rows(result, number, slice_)
    return [b.Heading(b.Text("Cluster {}", (number,)), 3),
            b.say("**Three example steps** (nearest the cluster's centre)"),
            _table(tables.example_rows(result, number, slice_), "cluster-examples"),
            b.say("**Its {:,} steps**", len(members)),
            _table(members, "cluster-steps", height=400, shown=MEMBERS_SHOWN)]


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    from ..patterns import vectors

    values, slice_ = link.values, link.slice
    found = vectors.load(root, query)
    out: list[b.Block] = [*intro(slice_), b.Heading("Steps like this one"), *neighbours(found, query, slice_, values),
                          b.Heading("Failure clusters")]
    result = grouped(found, query, slice_, values)
    if isinstance(result, list):
        return out + result
    return out + [clusters_line(result), *cluster_list(result), *open_cluster(result, values["cluster"], slice_)]
