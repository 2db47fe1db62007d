"""The Propagation page's open tab as a file (pages/propagation.py): Heatmap (the heatmaps per
backbone, every cell with its counts, the chains behind the link's cell), Chains (lengths per
backbone, the chain browser's page), Recall by role, Silent vs loud, Failure modes."""
from __future__ import annotations

from ...analyses import anomaly_propagation as P
from ...figures import propagation as figs
from ...figures.rates import rate_heatmap
from ...figures.text import plotly as esc
from ...view_state.state_fields import describe_slice, not_held
from ...views.app_link import Link, Query
from ..document import Document


def build(doc: Document, query: Query, link: Link) -> None:
    slice_, tab = link.slice, link.values["tab"]
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
    doc.heading(f"Tab: {tab}")
    if tab == "Failure modes":  # as on the page: these two need no chain
        failure_modes(doc, query, slice_)
    elif tab == "Silent vs loud":
        silent(doc, query, slice_)
    elif not status.has_chains:
        doc.text("There are no propagation chains in this slice: no scope holds two or more failed steps "
                 "(see the reasons above), so there is no heatmap, chain or role to show. "
                 "The Silent vs loud and Failure modes tabs still apply.", "info")
    elif tab == "Heatmap":
        heatmap(doc, query, link, sources)
    elif tab == "Chains":
        chains(doc, query, link)
    else:
        roles(doc, query, link, status.chain_corpora)


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


def paged(doc: Document, rows_of_page, page: int):
    """Rows of ``page`` with the total before paging; a page past the end falls back to page 1,
    said as the page says it."""
    rows, total, page, said = P.paged(rows_of_page, page)
    if said:
        doc.warning(said)
    return rows, total, page


def length_range(doc: Document, asked: list[int], longest: int) -> tuple[int, int]:
    """The chain browser's lengths: the link's when the slider offers them, else every length (said)."""
    low, high = 2, max(longest, 2)
    if asked and len(asked) == 2 and 2 <= asked[0] <= asked[1] <= high:
        low, high = int(asked[0]), int(asked[1])
    if asked and tuple(asked) != (low, high):
        doc.warning(not_held("chain lengths", f"{asked[0]} to {asked[1]}", f"showing lengths {low} to {high} "
                             f"(the longest chain here has {longest} failed steps)"))
    return low, high


def chains(doc: Document, query: Query, link: Link) -> None:
    slice_, values = link.slice, link.values
    lengths = P.chain_lengths(query, slice_)
    doc.heading("Chain lengths per backbone", 3)
    doc.text("Over every chain of the slice (the browser's filters below do not apply).", "note")
    doc.figure(figs.length_distribution(lengths))
    doc.heading("Chain browser", 3)
    origins = P.action_order(lengths["origin_action"])
    missing = [str(o) for o in values["origin"] if str(o) not in set(map(str, origins))]
    if missing:
        doc.warning(not_held("origin action", ", ".join(missing), "left out"))
    chosen = [o for o in values["origin"] if o in origins]
    low, high = length_range(doc, values["length"], int(lengths["length"].max()))
    doc.text(f"Origin action: {', '.join(chosen) or 'any'}; length {low} to {high}.", "note")
    rows, total, page = paged(doc, lambda n: P.chains(query, slice_, chosen, low, high, page=n), int(values["chain_page"]))
    if total == 0:
        doc.text("No chain matches these filters.", "info")
        return
    doc.text(f"Page {page} of {P.page_count(total)} ({total:,} chains).", "note")
    doc.table(P.chain_table(rows, "origin_step"), "chains")




def roles(doc: Document, query: Query, link: Link, chain_corpora) -> None:
    slice_, values = link.slice, link.values
    doc.heading("Recall by chain role (MAADBench Figures 8 and 11)", 3)
    sets = P.step_sets(query, slice_)
    sets = sets[sets["corpus"].isin(chain_corpora)]
    if sets.empty:
        doc.text("No step-level prediction set about the corpora with chains in this slice.", "info")
        return
    top_pct = float(values["top_pct"]) if values["rule"] == "top_pct" else None  # None: the sets' own labels
    per_set = P.role_recall(P.role_recall_counts(query, slice_, top_pct))
    if per_set.empty:
        doc.text("The step-level sets here flag nothing on the anomalous steps of this slice"
                 + (" (they carry no labels of their own: try top_pct)." if top_pct is None else "."), "info")
        return
    doc.text(("Flagged = the set's own label. " if top_pct is None else
              f"Flagged = score among the top {top_pct:g}% of the set's scored steps in the slice (ties at the cut "
              "all flagged). ")
             + "Recall on a role = share of its anomalous steps flagged; in isolation = the same actions' recall "
               "over all anomalies, weighted by the role's action mix; delta = role - isolation. Training rows "
               "(split 'train') are left out.", "note")
    averages = P.role_averages(per_set, sets)
    doc.figure(figs.role_recall_bars(averages))
    for frame, key, caption in figs.role_recall_tables(per_set, averages, sets):
        doc.table(frame, key, caption=caption)


def failure_modes(doc: Document, query: Query, slice_) -> None:
    doc.heading("MAST failure modes per backbone", 3)
    rows = P.failure_mode_counts(query, slice_)
    if rows.empty:
        doc.text("No failed step in this slice.", "info")
        return
    modes = P.failure_modes(rows)
    doc.text("Share of each backbone's failed steps per failure mode; FM-5 is error propagation (a failure after an "
             "earlier failure in the same scope, the cascade). \"not recorded\": the trace gives no mode.", "note")
    doc.figure(figs.failure_mode_bars(modes))
    doc.table(modes.round(1), "failure-modes")
    doc.table(P.failure_mode_codes(rows), "failure-mode-codes", caption="Error codes behind each failure mode")
