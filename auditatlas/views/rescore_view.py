"""The Re-score page's content: what a re-score does, the slice's steps per corpus by label (what
it can fit on), this session's last re-score, the re-scored prediction sets on the slice's
corpora, and the cross-backbone matrices.

Running a re-score or a matrix is an action of the reader's session: the app draws its widgets
and progress between the sections; ``page`` (the export) says what the link chose and shows
what the store holds.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analyses.board_kept import Remember
from ..detectors.request import scorable_corpora
from ..figures.text import plotly, plotly_list
from ..view_state.state_fields import describe_slice, labels_of
from . import blocks as b

Query = Callable[..., pd.DataFrame]


def intro(slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.note("Fit detectors from the registry on the steps of the sidebar slice and write one prediction set "
                   "per detector and seed into the store. Each seed holds out 20% of the rooms (runs, for corpora "
                   "without rooms): a room is never on both sides. Unsupervised detectors fit on the training steps, "
                   "one-class ones on the normal training steps, supervised ones on the labeled training steps; "
                   "unlabeled steps are scored but never used as labels."),
            b.say("**Slice:** {}", describe_slice(slice_))]


def label_counts(query: Query, slice_: Mapping[str, Any]) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The slice's steps per corpus by label, the corpora a re-score can fit on, and why the
    others cannot be."""
    counts = query("step_label_counts", {"slice": dict(slice_)})
    scorable, notes = scorable_corpora(counts.to_dict(orient="records"))
    return counts, list(scorable), list(notes)


def counts_table(counts: pd.DataFrame) -> list[b.Block]:
    if counts.empty:
        return []
    return [b.Table(counts, "rescore-label-counts", caption="Steps of the slice per corpus, by label.")]


def run_heading(notes: list[str], scorable: list[str]) -> list[b.Block]:
    out: list[b.Block] = [b.Heading("Run a re-score"), *(b.Text.plain(n, "info") for n in notes)]
    if not scorable:
        out.append(b.warning("This slice cannot be re-scored: no corpus in it holds both anomalous and normal labeled "
                             "steps, so no detector could be evaluated. Widen the slice in the sidebar."))
    return out


def last_run(last: Mapping[str, Any]) -> list[b.Block]:
    """This session's last re-score (what it wrote, its notes, its sets)."""
    out: list[b.Block] = []
    if last["source"]:
        out += [b.Text("Wrote {} prediction set(s) into store source {} in {:.1f} s. They are entrants on every "
                       "view now.", (len(last["sets"]), last["source"], last["seconds"]), "success"),
                b.Pre("", "\n".join(s["set_id"] for s in last["sets"]))]
    out += [b.Text.plain(n, "info") for n in last["notes"]]
    out.append(b.Table(pd.DataFrame(last["sets"]), "rescore-last", caption="This session's last re-score (test "
                       "ROC-AUC over the labeled test steps; blank: undefined)."))
    return out


def rescored_sets(query: Query, slice_: Mapping[str, Any], counts: pd.DataFrame) -> list[b.Block]:
    sets = query("rescore_sets", {"corpora": sorted(set(counts["corpus"])) if not counts.empty else [],
                                  "labels": labels_of(slice_)})
    out: list[b.Block] = [b.Heading("Re-scored prediction sets")]
    if sets.empty:
        out.append(b.note("No re-scored prediction set on the slice's corpora yet."))
    else:
        out.append(b.Table(sets.drop(columns=["params", "slice"]), "rescore-sets", caption=b.Text(
            "{} re-scored set(s) on the slice's corpora, newest first. test_roc_auc: over each set's labeled test "
            "steps (blank: one class only, undefined).", (len(sets),))))
    out.append(b.say("Per-action AUROC grids and the overall comparison: [Detectors](/detectors)"))
    return out


def cross_intro(scorable: list[str]) -> list[b.Block]:
    out: list[b.Block] = [
        b.Heading("Cross-backbone robustness"),
        b.note("Train on one backbone's steps, test on another's (MAADBench Figure 7, left). One room-disjoint split "
               "over all backbones per seed, so the diagonal is the within-backbone score on the same held-out "
               "rooms. Computed on request; not stored.")]
    if not scorable:
        out.append(b.note("Needs a slice with anomalous and normal labeled steps."))
    return out


def cross_heatmap(entry: Mapping[str, Any]):
    """ROC-AUC matrix: rows trained on, columns tested on; blank where undefined."""
    import plotly.graph_objects as go

    z = np.array([[np.nan if v is None else v for v in row] for row in entry["roc_auc"]], dtype=float)
    labels = plotly_list(entry["backbones"])
    text = np.where(np.isnan(z), "", np.char.mod("%.3f", np.nan_to_num(z)))
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, text=text, texttemplate="%{text}", colorscale="RdBu", zmin=0.0, zmax=1.0, zmid=0.5,
        hoverongaps=False, colorbar={"title": "ROC-AUC"},
        hovertemplate="trained on %{y}<br>tested on %{x}<br>ROC-AUC %{z:.3f}<extra></extra>",
    ))
    fig.update_layout(title=plotly(entry["detector"]), height=120 + 48 * len(labels),
                      margin=dict(l=10, r=10, t=40, b=10), xaxis_title="tested on", yaxis_title="trained on")
    fig.update_yaxes(autorange="reversed")
    return fig


def cross_result(cross: Mapping[str, Any]) -> list[b.Block]:
    """The matrices of a computed cross-backbone run (``detectors.cross.result_json``)."""
    out: list[b.Block] = [b.note("{}, feature set {}, seeds {}.", cross["corpus"], cross["feature_set"],
                                 cross["seeds"])]
    out += [b.Text.plain(n, "info") for n in cross["notes"]]
    for entry in cross["detectors"]:
        out.append(b.Figure(cross_heatmap(entry), key=f"cross-{entry['detector']}"))
        out += [b.Text.plain(n, "note") for n in entry["notes"]]
    return out


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """What the store holds for the slice; the link's choices of what to run, said in words."""
    slice_, values = {k: v for k, v in link.slice.items() if v}, link.values
    counts, scorable, notes = label_counts(query, slice_)
    out = [*intro(slice_), *counts_table(counts), *run_heading(notes, scorable)]
    out.append(b.note("The link chooses detectors {} on feature set {}, seeds 0..{}. A re-score runs in the app (it "
                      "writes new prediction sets into the store); this file shows what the store holds.",
                      ", ".join(values["rescore_detectors"]) or "none", values["rescore_feature_set"],
                      int(values["rescore_seeds"]) - 1))
    out += rescored_sets(query, slice_, counts) + cross_intro(scorable)
    out.append(b.note("The matrix is computed in the app on request (detectors {}, {} seed(s)); it is not kept in "
                      "the store, so the file does not hold it.", ", ".join(values["cross_detectors"]) or "none",
                      int(values["cross_seeds"])))
    return out
