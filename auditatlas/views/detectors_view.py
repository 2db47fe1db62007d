"""The Detectors page's content: the per-action AUROC grid and a cell's errors, the overall
comparison against random, cost beside accuracy, and the corpus's prediction sets.

The app draws the corpus, rule and share pickers, one tab per part, the backbone and cell
pickers and the chart's metric between the sections; ``page`` calls them in order with the
link's values (its open tab), for the export.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analyses import detector_comparison as dv
from ..analyses.board_kept import Remember
from ..figures import detectors as figs
from ..view_state.state_fields import describe_slice, not_held
from . import blocks as b
from .pages import DETECTOR_VIEW_MODES, DETECTORS

Query = Callable[..., pd.DataFrame]
NO_SCORED_STEP = "No labeled test step of this slice is scored by these sets. Widen the filters in the sidebar."
PLAIN_COLUMNS = ("action", "success rate", "labeled steps")  # the grid's columns that are not AUROC cells


# The analyses' own sentences below are our words and counts (no store text), so they are drawn
# as written, Markdown and all, as the page always drew them.


def intro(slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.note("Step-level prediction sets of one corpus, re-scored here or released (imported CSVs, judges), "
                   "compared on the labeled test steps of the sidebar slice (split test, or all for sets without a "
                   "split). Slice: {}.", describe_slice(slice_))]


def nothing_to_compare(query: Query, slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.Text(dv.nothing_to_compare(query("slice_summary", {"slice": dict(slice_)})), kind="info")]


def sets_state(corpus: str, sets_all: pd.DataFrame, sets: pd.DataFrame) -> tuple[list[b.Block], bool]:
    """The corpus's sets as the step-level views see them, and whether any is left to compare
    (False: the list of its sets says why not)."""
    if sets.empty:
        return [b.info("The prediction sets of **{}** hold no step-level test predictions. See the list below.", corpus),
                b.Table(figs.sets_frame(sets_all), f"detector-sets-{corpus}")], False
    hidden = sets_all[~sets_all["shown"]]
    if len(hidden):
        return [b.note("{} prediction set(s) of this corpus do not fit these step-level views (run-level, or no test "
                       "predictions); the Prediction sets tab lists them with the reason.", len(hidden))], True
    return [], True


# ------------------------------------------------------------------------------------ the grid

def grid_head(grid, sets: pd.DataFrame) -> tuple[list[b.Block], bool]:
    """What the grid rests on and how to read a cell; False when the slice holds no step of the corpus."""
    if grid.actions.empty:
        return [b.warning("This slice holds no steps of this corpus. Widen the filters in the sidebar.")], False
    return [b.say("**{} detector(s)** from {} prediction set(s); rests on {}.", len(grid.detectors), len(sets),
                  grid.rests_on()),
            *(b.Text(n, kind="note") for n in grid.notes),
            # How a cell is computed folds away: the grid itself is the page's answer.
            b.Fold("How a cell is read", (
                b.note("Cell: ROC-AUC of the detector's step scores against step labels, on the labeled test steps "
                       "of that action, mean ± sample std over its sets (seeds). Its 95% interval and its positives "
                       "(+) and negatives (−) per set are in the table of one row per cell below the grid, and in "
                       "the grid's CSV. A cell without positives or without negatives is undefined: grey, with the "
                       "reason, never 0.5."),
                b.Text(dv.INTERVAL_CAPTION, kind="note")))], True


def grid_maps(grid, side_by_side: bool) -> list[b.Block]:
    """Every backbone's heatmap side by side, on request. One backbone's grid is its coloured
    table alone: a Plotly heatmap of the same cells above it was most of what an open of the page
    cost the browser (bench/README.md), and pushed the table below the first screen."""
    if side_by_side:
        return [b.Figure(figs.heatmaps(grid, grid.backbones), key="grid-heatmaps")]
    return []


def grid_hint(facet: str, side_by_side: bool) -> b.Text:
    """How the grid opens a cell (the app's; an export cannot be clicked)."""
    return b.note("Backbone **{}**: click a detector's cell, {}, to list its errors below (the bottom row: over all "
                  "actions). Cells resting on fewer than {} positives or negatives are pale.", facet,
                  "in a heatmap or in the table" if side_by_side else "in the table", figs.SMALL_N)


def grid_styles(text: pd.DataFrame, num: pd.DataFrame, pale: pd.DataFrame) -> pd.DataFrame:
    """Each AUROC cell's colour (the other columns plain), pale where ``pale`` says the cell rests on
    few positives or negatives, as the heatmaps veil it."""
    styles = pd.DataFrame("", index=text.index, columns=text.columns)
    for col in text.columns:
        if col not in PLAIN_COLUMNS:
            styles[col] = [figs.auc_color(v, pale=bool(p)) for v, p in zip(num[col], pale[col])]
    return styles


def _pale_cells(shown, facet: str, num: pd.DataFrame, titles: Mapping[str, str]) -> pd.DataFrame:
    """True where a detector's cell of the wide grid rests on few positives or negatives."""
    cells = shown.cells[shown.cells["backbone"] == facet].set_index(["action", "detector"])
    pale = pd.DataFrame(False, index=num.index, columns=num.columns)
    for title, detector in titles.items():
        pale[title] = [(a, detector) in cells.index and np.isfinite(cells.loc[(a, detector), "auc_mean"])
                       and figs.small(cells.loc[(a, detector)]) for a in num["action"]]
    return pale


def grid_table(shown, corpus: str, facet: str) -> tuple[b.Table, pd.DataFrame, dict[str, str]]:
    """The grid of one backbone as a table: each cell its number on screen, coloured; its CSV the
    cells with their intervals and counts. With the numeric table (row positions of a chosen
    cell) and the map from column title to detector."""
    text, num, titles = dv.wide_grid(shown, facet, detail=False)
    table = b.Table(text.reset_index(drop=True), f"grid-{corpus}-{facet}",
                    caption=b.Text("The grid for backbone {}", (facet,)),
                    styles=grid_styles(text, num, _pale_cells(shown, facet, num, titles)).reset_index(drop=True),
                    download=dv.wide_grid(shown, facet)[0].reset_index(drop=True))
    return table, num, titles


def grid_long(shown, corpus: str) -> list[b.Block]:
    return [b.Table(figs.long_cells(shown), f"grid-long-{corpus}", placeholder="—",
                    caption="The same grid, one row per cell, with each cell's 95% interval and its positives and "
                            "negatives per set (for download)."),
            b.Table(figs.long_means(shown), f"grid-means-{corpus}", placeholder="—",
                    caption="The grid's means (the bottom row and the right column) with their intervals, one row per "
                            "mean (for download).")]


def cell_errors(query: Query, set_id: str, facet: str, action: str, slice_: Mapping[str, Any], rule: str,
                top_pct: float) -> list[b.Block]:
    """The false positives and negatives of one set in one cell, each with a link to its step."""
    errors = dv.cell_errors(query, set_id, facet, action, dict(slice_), DETECTOR_VIEW_MODES[rule], top_pct)
    if errors.empty:
        return [b.info("No false positive and no false negative in this cell for this set at its threshold.")]
    out: list[b.Block] = [b.say("Threshold: **{}**, over all labeled test steps of the set in the slice (not only this "
                                "cell's). Each link opens the step in the explorer, scored by this set.",
                                str(errors["threshold_used"].iloc[0]))]
    for kind, order in (("false positive", "highest-scored first"), ("false negative", "lowest-scored first")):
        part = errors[errors["kind"] == kind]
        total = int(part["n_in_cell"].iloc[0]) if len(part) else 0
        out.append(b.say("{}s ({}): {} of {:,} shown.", kind.capitalize(), order, len(part), total))
        if len(part):
            out.append(b.Table(figs.cell_error_rows(errors, kind), f"errors-{kind.split()[1]}", columns=(
                b.Column("explorer", link_text="open step", width="small"), b.Column("score", format="%.4g"))))
    return out


# ---------------------------------------------------------------------------- overall and cost

def overall_head(overall) -> tuple[list[b.Block], bool]:
    """What the comparison rests on and how it tests; False when no labeled test step is scored."""
    if overall.per_set["n_steps"].sum() == 0:
        return [b.warning(NO_SCORED_STEP)], False
    rested = overall.per_set
    out: list[b.Block] = [b.say("Rests on {} labeled test steps of {} runs per prediction set ({} sets, {} detectors).",
                                dv.span(rested["n_steps"]), dv.span(rested["n_runs"]), len(rested),
                                len(overall.per_detector))]
    if dv.one_class_note(rested):
        out.append(b.Text(dv.one_class_note(rested), kind="info"))
    out.append(b.note("Per detector, over the labeled test steps of the slice: mean ± sample std over its sets (seeds). "
                      "F1, accuracy and balanced accuracy need a decision: each set's own pred_label, or its top k% "
                      "(the threshold column says which). Grouped by supervision, then family. Undefined values are "
                      "blank."))
    if overall.baseline is None:
        out.append(b.Text(overall.notes[0], kind="warning"))
    else:
        out.append(b.note("Random baseline: **{}**. Test against it: one-tailed (is the ROC-AUC above random's?) paired "
                          "t-test (scipy.stats.ttest_rel) over shared seeds when there are at least {}, else "
                          "Mann-Whitney U over unpaired seeds, else not possible (said per row).", overall.baseline,
                          dv.MIN_SEEDS_FOR_TEST))
    return out, True


def overall_body(overall, metric_label: str, corpus: str) -> list[b.Block]:
    """The chart of the chosen metric, the table, and silent against loud anomalies."""
    per = overall.per_detector
    metric = dict(zip(DETECTORS["metric"].choices, dv.METRICS))[metric_label]
    return [b.Figure(figs.overall_chart(per, metric), key="overall-chart"),
            b.Table(figs.overall_frame(per), f"overall-{corpus}", placeholder=""),
            b.Text(dv.OVERALL_INTERVAL_CAPTION, kind="note"),
            b.say("**Silent and loud anomalies, detected apart**"),
            b.note("Silent: label 1 in a scope (puzzle, or run) that still succeeded, so the outcome does not reveal "
                   "it; loud: the scope failed. Recall of each at the threshold above; counts in the table (silent / "
                   "loud anomalies). Blank where the slice has none of that kind."),
            b.Figure(figs.silent_loud_chart(per), key="silent-loud-chart"),
            b.Fold(f"Per prediction set ({len(overall.per_set)})",
                   (b.Table(figs.per_set_frame(overall.per_set), f"overall-sets-{corpus}", placeholder=""),))]


def cost(overall, corpus: str) -> list[b.Block]:
    out: list[b.Block] = [b.Heading("Cost beside accuracy (MAADBench Figure 10)")]
    if overall.per_set["n_steps"].sum() == 0:
        return [*out, b.warning(NO_SCORED_STEP)]
    table = dv.cost_table(overall)
    recorded = table["reason"] == ""
    out.append(b.note("ROC-AUC (mean over seeds) against the fit + score wall time and the peak memory the detector's "
                      "job grew by, as recorded in each set's provenance (params). Released sets record none: blank, "
                      "with the reason."))
    if recorded.any():
        out.append(b.Figure(figs.cost_chart(table[recorded]), key="cost-chart"))
    else:
        out.append(b.info("No prediction set of this corpus records its cost (released sets do not); re-score a "
                          "detector to see one."))
    return [*out, b.Table(figs.cost_frame(table), f"cost-{corpus}", placeholder="")]


def prediction_sets(sets_all: pd.DataFrame, corpus: str) -> list[b.Block]:
    return [b.Heading("Prediction sets"),
            b.note("Every set about this corpus. Released sets (imported CSVs, judges) appear in the views wherever "
                   "their granularity fits; run-level sets are compared on the Boards page (POST detection)."),
            b.Table(figs.sets_frame(sets_all), f"detector-sets-{corpus}")]


GRID_HEADING = "Per-action ROC-AUC (MAADBench Figure 6)"
OVERALL_HEADING = "Overall comparison (MAADBench Figure 5)"
ERRORS_HEADING = "Errors behind a cell"


# ---------------------------------------------------------------------------- the whole page

def _pick(out: list[b.Block], asked: Any, options: list, what: str) -> Any:
    """The link's value when the view offers it, else the first option (said, as the page says it)."""
    if asked in options:
        return asked
    if asked not in (None, ""):
        out.append(b.Text.plain(not_held(what, asked, f"showing '{options[0]}' instead"), "warning"))
    return options[0]


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """The link's corpus, rule and open tab, as the page draws them."""
    slice_, values = link.slice, link.values
    out = intro(slice_)
    with_steps = dv.step_set_corpora(query, slice_)
    if with_steps.empty:
        return out + nothing_to_compare(query, slice_)
    corpus = _pick(out, values["detectors_corpus"], list(with_steps["corpus"]), "corpus")
    out.append(b.say("Corpus {}; decision rule {}, top share {:g}%.", corpus, values["rule"], values["top_pct"]))
    sets_all = dv.prediction_sets(query, corpus)
    sets = dv.step_sets(sets_all)
    state, comparable = sets_state(corpus, sets_all, sets)
    out += state
    if not comparable:
        return out
    tab, mode = values["tab"], DETECTOR_VIEW_MODES[values["rule"]]
    if tab == "Prediction sets":
        return out + prediction_sets(sets_all, corpus)
    if tab in ("Overall", "Cost"):
        overall = dv.compute_overall(query, corpus, slice_, mode, values["top_pct"], sets=sets)
        if tab == "Cost":
            return out + cost(overall, corpus)
        head, drawable = overall_head(overall)
        out += [b.Heading(OVERALL_HEADING), *head]
        return out + (overall_body(overall, values["metric"], corpus) if drawable else [])
    grid = dv.compute_grid(query, corpus, slice_, by_backbone=True, sets=sets)
    head, drawable = grid_head(grid, sets)
    out += [b.Heading(GRID_HEADING), *head]
    if not drawable:
        return out
    facet = _pick(out, values["grid_backbone"], [*grid.backbones, dv.ALL_BACKBONES], "backbone")
    shown = grid if facet != dv.ALL_BACKBONES else dv.compute_grid(query, corpus, slice_, by_backbone=False, sets=sets)
    out += grid_maps(grid, values["side_by_side"])
    table, num, _titles = grid_table(shown, corpus, facet)
    out.append(table)
    out += grid_long(shown, corpus)
    out.append(b.Heading(ERRORS_HEADING))
    action = _pick(out, values["action"], [dv.ALL_ACTIONS, *num["action"].iloc[:-1]], "action")
    detector = _pick(out, values["detector"], list(grid.detectors["detector"]), "detector")
    set_id = _pick(out, values["set"], list(sets.loc[sets["detector"] == detector, "set_id"]), "prediction set")
    out.append(b.say("Backbone {}; action {}; detector {}; prediction set {}.", facet, action, detector, set_id))
    return out + cell_errors(query, set_id, facet, action, slice_, values["rule"], values["top_pct"])
