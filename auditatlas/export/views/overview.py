"""The Overview as a file: what is loaded, the slice, action success, anomaly rate by capability,
silent failures (the same analyses and figures as pages/overview.py)."""
from __future__ import annotations

from ... import actions
from ...analyses import step_rates as rates
from ...figures.rates import rate_heatmap
from ...schema import DEFAULT_LABELS
from ...view_state.state_fields import describe_slice, labels_of
from ...views.app_link import Link, Query
from ..document import Document


def loaded_corpora(query: Query, labels: str = DEFAULT_LABELS):
    """The corpora and their counts (under the label choice ``labels``); a corpus known only
    through predictions about it says so."""
    loaded = query("corpora").merge(query("corpus_counts", {"labels": labels}), on="corpus", how="outer")
    no_runs = loaded["title"].isna()
    loaded.loc[no_runs, "title"] = loaded.loc[no_runs, "corpus"]
    loaded.loc[no_runs, "kind"] = "—"
    loaded.loc[no_runs, "label_process"] = "runs not loaded: only predictions about it are in the store"
    return loaded


def build(doc: Document, query: Query, link: Link) -> None:
    slice_ = link.slice
    doc.heading("What is loaded")
    doc.table(loaded_corpora(query, labels_of(link.slice)), "loaded-corpora")
    summary = query("slice_summary", {"slice": slice_})
    doc.heading("Slice")
    n_runs, n_steps = int(summary["runs"].sum()), int(summary["steps"].sum())
    doc.text(f"{describe_slice(slice_)}: {n_runs:,} runs, {n_steps:,} steps, "
             f"{int(summary['labeled_steps'].sum()):,} labeled.")
    if n_runs == 0:
        doc.warning("This slice holds no runs. Widen the filters in the sidebar.")
        return
    labeled = query("action_rates", {"slice": slice_})
    labeled = labeled[labeled["labeled_steps"] > 0]
    doc.heading("Action success rate per backbone (MAADBench Table 3)")
    if labeled.empty:
        doc.text(rates.no_labeled_steps(summary), "info")
    else:
        success = rates.action_success(labeled)
        order = sorted(success["action_short"].unique(),
                       key=lambda s: actions.sort_key(next((a.code for a in actions.ACTIONS if a.short == s), s)))
        doc.figure(rate_heatmap(success, "backbone", "action_short", "success_pct", "labeled_steps", col_order=order))
        doc.text("Share of labeled steps verified correct; n = labeled steps per cell. Unlabeled steps are excluded "
                 "and counted apart.", "note")
        doc.table(success[["backbone", "action", "action_short", "labeled_steps", "anomalies", "unlabeled_steps",
                           "success_pct"]].round(1), "action-success")
        doc.table(rates.overall_success(labeled).round(1), "overall-success", caption="Overall per backbone")
        doc.heading("Anomaly rate by capability (MAADBench Figure 3)")
        by_cap = rates.anomaly_by_capability(labeled)
        doc.figure(rate_heatmap(by_cap, "capability", "backbone", "anomaly_pct", "labeled_steps", colorscale="Reds"))
        doc.table(by_cap.round(1), "anomaly-by-capability")
    doc.heading("Silent failures (MAADBench Table 4)")
    doc.text("An anomaly is silent when its puzzle (or, without puzzles, its run) still succeeded. Formatting errors "
             "are counted apart from action failures. Rates are blank where there is nothing to divide by.", "note")
    doc.table(rates.silent_failures(query("silent_failures", {"slice": slice_})).round(1), "silent-failures")
