"""The Propagation page's content: the slice's chains in numbers, then per tab the heatmaps and
the chains behind a cell, the chain browser, recall by chain role, silent vs loud, and the MAST
failure modes.

The app draws the tabs, the backbone and cell pickers, the clickable heatmap and the pages'
numbers between the sections; ``page`` calls them in order with the link's values (its open
tab, its map, its cell), for the export.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses import anomaly_propagation as P
from ..analyses.board_kept import Remember
from ..figures import propagation as figs
from ..figures.rates import rate_heatmap
from ..figures.text import plotly as esc
from ..view_state.state_fields import EMPTY_SLICE, describe_slice, not_held
from . import blocks as b

Query = Callable[..., pd.DataFrame]
HEATMAP_HEADING = "Propagation heatmap per backbone (MAADBench Figure 4)"
CELL_HEADING = "Chains behind a cell"


@dataclass
class Slice:
    """What every tab reads: the slice's steps per source, its corpora and their chain status."""

    sources: pd.DataFrame
    corpora: pd.DataFrame
    status: Any


def intro() -> list[b.Block]:
    return [b.note("Within one scope (the same run and puzzle; the run for corpora without puzzles), does a failed "
                   "step come with later failures? A chain is the sorted failed steps of one scope when there are at "
                   "least two: the first is its origin, the last its down step, the rest mid (MAADBench Figures 4, 8 "
                   "and 11).")]


def summary(query: Query, slice_: Mapping[str, Any]) -> tuple[list[b.Block], Slice | None]:
    """The slice in numbers and why a corpus has no chains; None: no runs."""
    sources = P.step_counts(query, slice_)
    corpora = P.corpora(sources, P.chain_counts(query, slice_))
    if corpora.empty:
        return [b.warning(EMPTY_SLICE)], None
    status = P.chain_status(corpora)
    out: list[b.Block] = [b.say("**{}**: {:,} runs, {:,} steps, {:,} failed steps, {:,} chains.", describe_slice(slice_),
                                int(corpora["runs"].sum()), int(corpora["steps"].sum()),
                                int(corpora["failed_steps"].sum()), int(corpora["chains"].sum()))]
    out += [b.note("{} has no chains here: {}.", corpus, reason) for corpus, reason in status.reasons.items()]
    return out, Slice(sources, corpora, status)


def no_chains() -> list[b.Block]:
    return [b.info("There are no propagation chains in this slice: no scope holds two or more failed steps (see the "
                   "reasons above), so there is no heatmap, chain or role to show. The Silent vs loud and Failure "
                   "modes tabs still apply.")]


# ------------------------------------------------------------------------ heatmap and a cell

def heatmap_cells(query: Query, slice_: Mapping[str, Any], sources: pd.DataFrame) -> pd.DataFrame:
    return P.heatmap(sources, P.followed_counts(query, slice_), P.possible_pairs(query))


def heatmap_head() -> list[b.Block]:
    return [b.Heading(HEATMAP_HEADING),
            b.Fold("How a cell is read", (
                b.note("Cell = share of failed steps of the row's action followed, later in the same scope, by at "
                       "least one failed step of the column's action. n: the row's failed source steps. "
                       "\"–\": the action never failed for that backbone. Grey: no scope in the store has the "
                       "column's action after the row's, so the pair cannot occur. Pale cells: fewer than {} failed "
                       "source steps in the row, a share that one step more or less moves a lot.", figs.SMALL_N),)),
            b.hint("Click a cell to list its chains.")]


def heatmap_figure(cells: pd.DataFrame):
    """Every backbone's map side by side, on request (one backbone's is its table)."""
    return figs.heatmaps(cells)


def heatmap_table(cells: pd.DataFrame, backbone: str) -> tuple[b.Table, figs.CellTable]:
    """One backbone's map as a coloured table, the page's first answer: a Plotly heatmap of the
    same cells was most of what an open of the page cost the browser (bench/README.md). With the
    actions under its rows and columns, for the cell a click chooses."""
    grid = figs.heatmap_table(cells, backbone)
    return b.Table(grid.text, f"propagation-map-{backbone}",
                   caption=b.Text("**{}**: the share of each row's failed steps followed, later in the same scope, by a "
                                  "failed step of the column's action.", (backbone,)),
                   styles=grid.styles, download=grid.numbers,
                   # A short title differs from its action only for MAADBench's own actions (our
                   # names, not the store's), so the help names no text read from a file.
                   columns=tuple(b.Column(title, help=f"later failed action {action}")
                                 for title, action in grid.columns.items() if title != action)), grid


def heatmap_tail(cells: pd.DataFrame, side_by_side: bool) -> list[b.Block]:
    """The actions' short names under the maps (the table's rows name them), and every cell with
    its counts."""
    legend = ", ".join(f"{P.action_label(a)} = {a}" for a in P.action_order(cells["src_action"])
                       if P.action_label(a) != a) if side_by_side else ""
    return [*([b.Text.plain(legend, "note")] if legend else []),
            b.Fold("Every cell with its counts", (
                b.Table(cells.assign(rate_pct=(100 * cells["rate"]).round(1)).drop(columns="rate"),
                        "propagation-heatmap"),))]


def no_cell() -> list[b.Block]:
    return [b.hint("Click a heatmap cell, or choose a backbone and both actions, to list the chains behind it.")]


def cell_rate(cells: pd.DataFrame, backbone: str, src: str, later: str) -> list[b.Block]:
    cell = cells[(cells["backbone"] == backbone) & (cells["src_action"] == src) & (cells["later_action"] == later)]
    if cell.empty or int(cell["failed"].iloc[0]) == 0:
        return []
    c = cell.iloc[0]
    return [b.say("**{}**: {:,} of {:,} failed {} steps ({:.1f}%) are followed by a failed {} step in their scope.",
                  backbone, int(c.followed), int(c.failed), src, 100 * c.rate, later)]


def cell_chains(query: Query, slice_: Mapping[str, Any], cells: pd.DataFrame, backbone: str, src: str, later: str,
                page: int) -> list[b.Block]:
    """The cell's rate and one page of the chains behind it."""
    return chain_page(lambda n: P.cell_chains(query, slice_, backbone, src, later, page=n), page,
                      counted="source steps", step_column="source_step", table_key="cell-chains",
                      lead=cell_rate(cells, backbone, src, later),
                      empty="No chain behind this cell: no failed step of the source action is followed by a failed "
                            "step of the later action in this slice.")


def chain_page(rows_of_page, page: int, *, counted: str, step_column: str, table_key: str, empty: str,
               lead: list[b.Block] | None = None) -> list[b.Block]:
    """One page of chains, each linking to the explorer at its ``step_column``; a page past the
    end falls back to page 1 (said). ``lead`` stands above it whatever the count."""
    rows, total, page, said = P.paged(rows_of_page, int(page))
    out: list[b.Block] = [b.Text.plain(said, "warning")] if said else []
    out += lead or []
    if total == 0:
        return [*out, b.info(empty)]
    at = "the source step" if step_column == "source_step" else "its origin step"
    return [*out, b.note("Page {} of {} ({:,} {}). Each links to the trace explorer at {}.", int(page),
                         P.page_count(total), total, counted, at),
            b.Table(P.chain_table(rows, step_column), table_key, columns=(
                b.Column("explorer", link_text="open step", help="The trace explorer at this step"),))]


# ---------------------------------------------------------------------------- chain browser

def lengths_figure(lengths: pd.DataFrame) -> list[b.Block]:
    return [b.Heading("Chain lengths per backbone"),
            b.note("Over every chain of the slice (the browser's filters below do not apply); hover for counts."),
            b.Figure(figs.length_distribution(lengths), key="chain-lengths"),
            b.Heading("Chain browser")]


def one_length() -> list[b.Block]:
    return [b.note("Every chain here has length 2.")]


def lengths_not_held(asked: list[int] | None, low: int, high: int, longest: int) -> list[b.Block]:
    if asked and tuple(asked) != (low, high):
        return [b.Text.plain(not_held("chain lengths", f"{asked[0]} to {asked[1]}", f"showing lengths {low} to {high} "
                                      f"(the longest chain here has {longest} failed steps)"), "warning")]
    return []


def browser_chains(query: Query, slice_: Mapping[str, Any], origins: list[str], low: int, high: int,
                   page: int) -> list[b.Block]:
    return chain_page(lambda n: P.chains(query, slice_, origins, low, high, page=n), page, counted="chains",
                      step_column="origin_step", table_key="chains", empty="No chain matches these filters.")


# ---------------------------------------------------------------------------- recall by role

def roles_head(query: Query, slice_: Mapping[str, Any], chain_corpora) -> tuple[list[b.Block], pd.DataFrame | None]:
    out: list[b.Block] = [b.Heading("Recall by chain role (MAADBench Figures 8 and 11)")]
    sets = P.step_sets(query, slice_)
    sets = sets[sets["corpus"].isin(chain_corpora)]
    if sets.empty:
        return [*out, b.info("No step-level prediction set about the corpora with chains in this slice. Load one with "
                             "`auditatlas ingest predictions` or re-score a detector.")], None
    return out, sets


def roles_body(query: Query, slice_: Mapping[str, Any], sets: pd.DataFrame, top_pct: float | None) -> list[b.Block]:
    """Recall per chain role against in isolation (``top_pct`` None: the sets' own labels)."""
    per_set = P.role_recall(P.role_recall_counts(query, slice_, top_pct))
    if per_set.empty:
        return [b.info("The step-level sets here flag nothing on the anomalous steps of this slice"
                       + (" (they carry no labels of their own: try top_pct)." if top_pct is None else "."))]
    flagged = ("Flagged = the set's own label. " if top_pct is None else
               f"Flagged = score among the top {top_pct:g}% of the set's scored steps in the slice (ties at the cut "
               "all flagged). ")
    averages = P.role_averages(per_set, sets)
    (first, key, caption), *rest = figs.role_recall_tables(per_set, averages, sets)
    return [b.note(flagged + "Recall on a role = share of its anomalous steps flagged; in isolation = the same "
                   "actions' recall over all anomalies, weighted by the role's action mix; delta = role - isolation. "
                   "Training rows (split 'train') are left out."),
            b.Row(((b.Figure(figs.role_recall_bars(averages), key="role-bars"),),
                   (b.Table(first, key, caption=caption),)), (2, 3), "large"),
            *(b.Table(frame, k, caption=c) for frame, k, c in rest)]


# --------------------------------------------------------------- silent vs loud, failure modes

def silent(query: Query, slice_: Mapping[str, Any]) -> list[b.Block]:
    out: list[b.Block] = [b.Heading("Silent vs loud (MAADBench Table 4)")]
    counts = P.silent_counts(query, slice_)
    if counts.empty:
        return [*out, b.info("No failed step in this slice.")]
    by_action = P.silent_by_action(counts)
    shown = by_action.assign(backbone=by_action["backbone"].map(esc),
                             action=by_action["action"].map(lambda a: esc(P.action_label(a))))
    by_backbone = P.silent_by_backbone(counts)
    chart = rate_heatmap(shown, "backbone", "action", "silent_pct", "action_failures",
                         col_order=[esc(P.action_label(a)) for a in P.action_order(counts["action"])],
                         colorscale="Blues")
    return [*out,
            b.note("An anomaly is silent when its puzzle (or, without puzzles, its run) still succeeded; loud when it "
                   "failed. Formatting errors are counted apart. Cell: silent share of action failures, n = "
                   "failures."),
            b.Row(((b.Figure(chart, key="silent-heatmap"),),
                   (b.Table(by_backbone[["backbone", "action_failures", "silent_pct", "format_errors",
                                         "format_silent_pct", "anomalies_without_scope_outcome"]].round(1),
                            "silent-by-backbone",
                            caption="Per backbone: silent % of action failures and of formatting errors"),)),
                  (3, 2), "large"),
            b.Fold("Per backbone and action, with counts", (b.Table(by_action.round(1), "silent-by-action"),))]


def failure_modes(query: Query, slice_: Mapping[str, Any]) -> list[b.Block]:
    out: list[b.Block] = [b.Heading("MAST failure modes per backbone")]
    rows = P.failure_mode_counts(query, slice_)
    if rows.empty:
        return [*out, b.info("No failed step in this slice.")]
    modes = P.failure_modes(rows)
    return [*out,
            b.note("Share of each backbone's failed steps per failure mode; FM-5 is error propagation (a failure "
                   "after an earlier failure in the same scope, the cascade). \"not recorded\": the trace gives no "
                   "mode."),
            b.Figure(figs.failure_mode_bars(modes), key="failure-modes"),
            b.Table(modes.round(1), "failure-modes"),
            b.Fold("Error codes behind each failure mode", (b.Table(P.failure_mode_codes(rows), "failure-mode-codes"),))]


# ---------------------------------------------------------------------------- the whole page

def _chosen(out: list[b.Block], asked: Any, options: list, what: str, fallback: Any, instead: str) -> Any:
    if asked in (None, "") or asked in options:
        return asked if asked not in (None, "") else fallback
    out.append(b.Text.plain(not_held(what, asked, instead), "warning"))
    return fallback


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """The link's open tab; its map (the map's backbone, else the cell's, else the first; every
    backbone's with side_by_side=1), its cell, its chain browser's filters and pages."""
    slice_, values, tab = link.slice, link.values, link.values["tab"]
    out = intro()
    head, state = summary(query, slice_)
    out += head
    if state is None:
        return out
    out.append(b.Heading(b.Text("Tab: {}", (tab,))))
    if tab == "Failure modes":  # these two need no chain
        return out + failure_modes(query, slice_)
    if tab == "Silent vs loud":
        return out + silent(query, slice_)
    if not state.status.has_chains:
        return out + no_chains()
    if tab == "Heatmap":
        cells = heatmap_cells(query, slice_, state.sources)
        backbones = sorted(cells["backbone"].unique())
        cell_backbone = values["cell_backbone"]
        default = cell_backbone if cell_backbone in backbones else backbones[0]
        shown = _chosen(out, values["map_backbone"], backbones, "backbone", default, f"showing '{default}' instead")
        out += heatmap_head()
        out.append(b.Figure(heatmap_figure(cells), key="propagation-heatmap") if values["side_by_side"]
                   else heatmap_table(cells, shown)[0])
        out += heatmap_tail(cells, values["side_by_side"])
        out.append(b.Heading(CELL_HEADING))
        acts = P.action_order(cells["src_action"])
        backbone = _chosen(out, cell_backbone, backbones, "backbone", None, "no cell is chosen")
        src = _chosen(out, values["src_action"], acts, "source action", None, "no cell is chosen")
        later = _chosen(out, values["later_action"], acts, "later action", None, "no cell is chosen")
        if not (backbone and src and later):
            return out + no_cell()
        return out + cell_chains(query, slice_, cells, backbone, src, later, values["cell_page"])
    if tab == "Chains":
        lengths = P.chain_lengths(query, slice_)
        out += lengths_figure(lengths)
        origins = P.action_order(lengths["origin_action"])
        missing = [str(o) for o in values["origin"] if str(o) not in set(map(str, origins))]
        if missing:
            out.append(b.Text.plain(not_held("origin action", ", ".join(missing), "left out"), "warning"))
        chosen = [o for o in values["origin"] if o in origins]
        longest = int(lengths["length"].max())
        asked = values["length"]
        low, high = 2, max(longest, 2)
        if asked and len(asked) == 2 and 2 <= asked[0] <= asked[1] <= high:
            low, high = int(asked[0]), int(asked[1])
        out += lengths_not_held(asked, low, high, longest)
        out.append(b.note("Origin action: {}; length {} to {}.", ", ".join(chosen) or "any", low, high))
        return out + browser_chains(query, slice_, chosen, low, high, values["chain_page"])
    head, sets = roles_head(query, slice_, state.status.chain_corpora)
    out += head
    if sets is None:
        return out
    top_pct = float(values["top_pct"]) if values["rule"] == "top_pct" else None
    return out + roles_body(query, slice_, sets, top_pct)
