"""The Detectors page's open tab as a file: the per-action AUROC grid (heatmaps, the backbone's
grid table coloured as on the page, the long form), the overall comparison, cost, the sets."""
from __future__ import annotations

import pandas as pd

from ...analyses import detector_comparison as dv
from ...figures import detectors as figs
from ...view_state.state_fields import describe_slice
from ...views import not_held
from ...views.app_link import Link, Query
from ...views.pages import DETECTOR_VIEW_MODES, DETECTORS
from ..document import Document


def build(doc: Document, query: Query, link: Link) -> None:
    slice_, values = link.slice, link.values
    doc.text("Step-level prediction sets of one corpus, re-scored here or released (imported CSVs, judges), compared "
             "on the labeled test steps of the slice (split test, or all for sets without a split). "
             f"Slice: {describe_slice(slice_)}.", "note")
    corpora = query("detector_corpora")
    if slice_.get("corpus"):
        corpora = corpora[corpora["corpus"].isin(slice_["corpus"])]
    with_steps = list(corpora.loc[corpora["step_sets"] > 0, "corpus"])
    if not with_steps:
        doc.text("No step-level prediction set in this slice's corpora.", "info")
        return
    corpus = pick(doc, values["detectors_corpus"], with_steps, "corpus")
    doc.text(f"Corpus {corpus}; decision rule {values['rule']}, top share {values['top_pct']:g}%.")
    sets_all = dv.prediction_sets(query, corpus)
    sets = dv.step_sets(sets_all)
    tab = values["tab"]
    doc.heading(tab)
    if sets.empty or tab == "Prediction sets":
        if sets.empty:
            doc.text(f"The prediction sets of {corpus} hold no step-level test predictions.", "info")
        doc.table(figs.sets_frame(sets_all), f"detector-sets-{corpus}")
        return
    mode = DETECTOR_VIEW_MODES[values["rule"]]
    if tab == "AUROC grid":
        grid_tab(doc, query, link, corpus, sets)
    elif tab == "Overall":
        overall_tab(doc, query, link, corpus, sets, mode)
    else:
        cost_tab(doc, query, link, corpus, sets, mode)


def pick(doc: Document, asked, options: list, what: str):
    """The link's value when the view offers it, else the first option (said, as the page says it)."""
    if asked in options:
        return asked
    if asked not in (None, ""):
        doc.warning(not_held(what, asked, f"showing '{options[0]}' instead"))
    return options[0]


def grid_tab(doc: Document, query: Query, link: Link, corpus: str, sets: pd.DataFrame) -> None:
    grid = dv.compute_grid(query, corpus, link.slice, by_backbone=True, sets=sets)
    if grid.actions.empty:
        doc.warning("This slice holds no steps of this corpus. Widen the filters in the sidebar.")
        return
    doc.text(f"{len(grid.detectors)} detector(s) from {len(sets)} prediction set(s); rests on {grid.rests_on()}.")
    doc.text("Cell: ROC-AUC of the detector's step scores against step labels, on the labeled test steps of that "
             "action, mean ± sample std over its sets (seeds), with positives (+) and negatives (−) per set. A cell "
             "without positives or without negatives is undefined: grey, with the reason, never 0.5.", "note")
    doc.text(dv.INTERVAL_CAPTION, "note")
    for note in grid.notes:
        doc.text(note, "note")
    backbones = grid.backbones
    doc.figure(figs.heatmaps(grid, backbones))
    facet = pick(doc, link.values["grid_backbone"], [*backbones, dv.ALL_BACKBONES], "backbone")
    shown = grid if facet != dv.ALL_BACKBONES else dv.compute_grid(query, corpus, link.slice, by_backbone=False, sets=sets)
    text, num, _titles = dv.wide_grid(shown, facet)
    styles = pd.DataFrame("", index=text.index, columns=text.columns)
    for col in text.columns:
        if col not in ("action", "success rate", "labeled steps"):
            styles[col] = num[col].map(figs.auc_color)
    doc.table(text.reset_index(drop=True), f"grid-{corpus}-{facet}", caption=f"The grid for backbone {facet}",
              styles=styles.reset_index(drop=True))
    doc.table(figs.long_cells(shown), f"grid-long-{corpus}", caption="The same grid, one row per cell.")
    doc.table(figs.long_means(shown), f"grid-means-{corpus}",
              caption="The grid's means (the bottom row and the right column), one row per mean.")
    cell_errors(doc, query, link, corpus, sets, list(num["action"].iloc[:-1]), list(grid.detectors["detector"]), facet)


def cell_errors(doc: Document, query: Query, link: Link, corpus: str, sets: pd.DataFrame, actions: list[str],
                detectors: list[str], facet: str) -> None:
    """The errors behind the link's cell (its action and detector, as the page's selectors pick
    them: all actions and the first detector and set by default)."""
    values = link.values
    doc.heading("Errors behind a cell", 3)
    action = pick(doc, values["action"], [dv.ALL_ACTIONS, *actions], "action")
    detector = pick(doc, values["detector"], detectors, "detector")
    own_sets = list(sets.loc[sets["detector"] == detector, "set_id"])
    set_id = pick(doc, values["set"], own_sets, "prediction set")
    doc.text(f"Backbone {facet}; action {action}; detector {detector}; prediction set {set_id}.")
    errors = dv.cell_errors(query, set_id, facet, action, link.slice, DETECTOR_VIEW_MODES[values["rule"]],
                            values["top_pct"])
    if errors.empty:
        doc.text("No false positive and no false negative in this cell for this set at its threshold.", "info")
        return
    doc.text(f"Threshold: {errors['threshold_used'].iloc[0]}, over all labeled test steps of the set in the slice "
             "(not only this cell's). Each link is the app's Explorer at the step, scored by this set.", "note")
    for kind, order in (("false positive", "highest-scored first"), ("false negative", "lowest-scored first")):
        part = errors[errors["kind"] == kind]
        total = int(part["n_in_cell"].iloc[0]) if len(part) else 0
        doc.text(f"{kind.capitalize()}s ({order}): {len(part)} of {total:,} shown.")
        if len(part):
            doc.table(figs.cell_error_rows(errors, kind), f"errors-{kind.split()[1]}")


def overall_tab(doc: Document, query: Query, link: Link, corpus: str, sets: pd.DataFrame, mode: str) -> None:
    overall = dv.compute_overall(query, corpus, link.slice, mode, link.values["top_pct"], sets=sets)
    if overall.per_set["n_steps"].sum() == 0:
        doc.warning("No labeled test step of this slice is scored by these sets. Widen the filters in the sidebar.")
        return
    if overall.baseline is None:
        doc.warning(overall.notes[0])
    if dv.one_class_note(overall.per_set):
        doc.text(dv.one_class_note(overall.per_set), "info")
    label = link.values["metric"]
    metric = dict(zip(DETECTORS["metric"].choices, dv.METRICS))[label]
    doc.figure(figs.overall_chart(overall.per_detector, metric))
    doc.table(figs.overall_frame(overall.per_detector), f"overall-{corpus}")
    doc.text(dv.OVERALL_INTERVAL_CAPTION, "note")
    doc.heading("Silent and loud anomalies, detected apart", 3)
    doc.figure(figs.silent_loud_chart(overall.per_detector))
    doc.table(figs.per_set_frame(overall.per_set), f"overall-sets-{corpus}", caption="Per prediction set")


def cost_tab(doc: Document, query: Query, link: Link, corpus: str, sets: pd.DataFrame, mode: str) -> None:
    overall = dv.compute_overall(query, corpus, link.slice, mode, link.values["top_pct"], sets=sets)
    if overall.per_set["n_steps"].sum() == 0:
        doc.warning("No labeled test step of this slice is scored by these sets. Widen the filters in the sidebar.")
        return
    cost = dv.cost_table(overall)
    recorded = cost["reason"] == ""
    if recorded.any():
        doc.figure(figs.cost_chart(cost[recorded]))
    else:
        doc.text("No prediction set of this corpus records its cost (released sets do not).", "info")
    doc.table(figs.cost_frame(cost), f"cost-{corpus}")
