"""The Propagation page's Heatmap tab as a file: the heatmaps per backbone, every cell with its
counts, the chains behind the link's cell, silent vs loud (pages/propagation.py)."""
from __future__ import annotations

from ...analyses import anomaly_propagation as P
from ...figures import propagation as figs
from ...figures.rates import rate_heatmap
from ...figures.text import plotly as esc
from ...views.fields import describe_slice
from ..document import Document
from ..link import ExportError, Link, Query


def build(doc: Document, query: Query, link: Link) -> None:
    slice_, values = link.slice, link.values
    if values["tab"] != "Heatmap":
        raise ExportError(f"The Propagation page's {values['tab']} tab is not covered by export yet; "
                          "its Heatmap tab is (tab=Heatmap).")
    sources = P.step_counts(query, slice_)
    corpora = P.corpora(sources, P.chain_counts(query, slice_))
    if corpora.empty:
        doc.warning("This slice holds no runs. Widen the filters in the sidebar.")
        return
    status = P.chain_status(corpora)
    doc.text(f"{describe_slice(slice_)}: {int(corpora['runs'].sum()):,} runs, {int(corpora['steps'].sum()):,} steps, "
             f"{int(corpora['failed_steps'].sum()):,} failed steps, {int(corpora['chains'].sum()):,} chains.")
    for corpus, reason in status.reasons.items():
        doc.text(f"{corpus} has no chains here: {reason}.", "note")
    if status.has_chains:
        heatmap(doc, query, link, sources)
    else:
        doc.text("There are no propagation chains in this slice: no scope holds two or more failed steps.", "info")
    silent(doc, query, slice_)


def heatmap(doc: Document, query: Query, link: Link, sources) -> None:
    cells = P.heatmap(sources, P.followed_counts(query, link.slice), P.possible_pairs(query))
    doc.heading("Propagation heatmap per backbone (MAADBench Figure 4)")
    doc.text("Cell = share of failed steps of the row's action followed, later in the same scope, by at least one "
             "failed step of the column's action. n under a row = its failed source steps. \"–\": the action never "
             "failed for that backbone. Grey: no scope in the store has the column's action after the row's.", "note")
    doc.figure(figs.heatmaps(cells))
    legend = ", ".join(f"{P.action_label(a)} = {a}" for a in P.action_order(cells["src_action"])
                       if P.action_label(a) != a)
    if legend:
        doc.text(legend, "note")
    doc.table(cells.assign(rate_pct=(100 * cells["rate"]).round(1)).drop(columns="rate"), "propagation-heatmap",
              caption="Every cell with its counts")
    backbone, src, later = (link.values[k] for k in ("cell_backbone", "src_action", "later_action"))
    if backbone and src and later:
        doc.heading("Chains behind a cell", 3)
        page = link.values["cell_page"]
        rows = P.cell_chains(query, link.slice, backbone, src, later, page=page)
        total = P.total_rows(rows)
        cell = cells[(cells["backbone"] == backbone) & (cells["src_action"] == src) & (cells["later_action"] == later)]
        if not cell.empty and int(cell["failed"].iloc[0]) > 0:
            c = cell.iloc[0]
            doc.text(f"{backbone}: {int(c.followed):,} of {int(c.failed):,} failed {src} steps ({100 * c.rate:.1f}%) "
                     f"are followed by a failed {later} step in their scope.")
        if total == 0:
            doc.text("No chain behind this cell on this page.", "info")
        else:
            doc.text(f"Page {page} of {P.page_count(total)} ({total:,} source steps).", "note")
            doc.table(P.chain_table(rows, "source_step"), "cell-chains")


def silent(doc: Document, query: Query, slice_) -> None:
    doc.heading("Silent vs loud (MAADBench Table 4)")
    counts = P.silent_counts(query, slice_)
    if counts.empty:
        doc.text("No failed step in this slice.", "info")
        return
    by_action = P.silent_by_action(counts)
    shown = by_action.assign(backbone=by_action["backbone"].map(esc),
                             action=by_action["action"].map(lambda a: esc(P.action_label(a))))
    doc.figure(rate_heatmap(shown, "backbone", "action", "silent_pct", "action_failures",
                            col_order=[esc(P.action_label(a)) for a in P.action_order(counts["action"])],
                            colorscale="Blues"))
    by_backbone = P.silent_by_backbone(counts)
    doc.table(by_backbone[["backbone", "action_failures", "silent_pct", "format_errors", "format_silent_pct",
                           "anomalies_without_scope_outcome"]].round(1), "silent-by-backbone",
              caption="Per backbone: silent % of action failures and of formatting errors")
    doc.table(by_action.round(1), "silent-by-action", caption="Per backbone and action, with counts")
