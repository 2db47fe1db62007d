"""Detectors: per-action AUROC grid, overall comparison and cost, over every step-level
prediction set of a corpus (re-scored and released alike), on the sidebar slice."""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.analyses import detector_comparison as dv
from auditatlas.views.pages import DETECTOR_TABS, DETECTOR_VIEW_MODES, DETECTORS, RULES
from components import auroc_grid, backbone_maps, cached, export_button, view_state
from components.filters import describe
from components.safe import md
from components.tables import table

slice_ = st.session_state.get("slice", {})

st.title("Detectors")
st.caption("Step-level prediction sets of one corpus, re-scored here or released (imported CSVs, judges), compared "
           "on the labeled test steps of the sidebar slice (split test, or all for sets without a split). "
           f"Slice: {md(describe(slice_))}.")
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(DETECTORS)
export_button.draw(DETECTORS)

with_steps = dv.step_set_corpora(cached.query, slice_)
if with_steps.empty:
    st.info(dv.nothing_to_compare(cached.query("slice_summary", {"slice": slice_})))
    st.stop()

top = st.columns([2, 2, 1])
corpus = top[0].selectbox("Corpus", list(with_steps["corpus"]), key="detectors_corpus", bind="query-params",
                          help="Corpora with step-level prediction sets (sets per corpus: " +
                               ", ".join(f"{md(c)}: {n}" for c, n in zip(with_steps["corpus"], with_steps["step_sets"])) + ")")
rule = top[1].radio("Decision rule", RULES, key="rule", bind="query-params", horizontal=True,
                    help="own: a set's own pred_label where every scored step has one, else its top share. "
                         "top_pct: every set flags its top share of labeled test steps (ties at the cut all flagged).")
top_pct = top[2].number_input("top share (%)", min_value=DETECTORS["top_pct"].low, max_value=DETECTORS["top_pct"].high,
                              value=DETECTORS["top_pct"].default, step=1.0, key="top_pct", bind="query-params")
# The detector views name the rule their ``threshold`` mode and the share their ``top_k``.
view_mode = DETECTOR_VIEW_MODES[rule]
link.not_held("detectors_corpus", "corpus", corpus)

sets_all = dv.prediction_sets(cached.query, corpus)
sets = dv.step_sets(sets_all)
if sets.empty:
    st.info(f"The prediction sets of **{md(corpus)}** hold no step-level test predictions. See the list below.")
    table(auroc_grid.sets_frame(sets_all), f"detector-sets-{corpus}")
    st.stop()
hidden = sets_all[~sets_all["shown"]]
if len(hidden):
    st.caption(f"{len(hidden)} prediction set(s) of this corpus do not fit these step-level views "
               "(run-level, or no test predictions); the Prediction sets tab lists them with the reason.")

TABS = list(DETECTOR_TABS)
tabs = st.tabs(TABS, key="tab", bind="query-params")


def grid_tab() -> None:
    st.subheader("Per-action ROC-AUC (MAADBench Figure 6)")
    with st.spinner("Scoring the grid…"):
        grid = dv.compute_grid(cached.query, corpus, slice_, by_backbone=True, sets=sets)
    if grid.actions.empty:
        st.warning("This slice holds no steps of this corpus. Widen the filters in the sidebar.")
        return
    st.markdown(f"**{len(grid.detectors)} detector(s)** from {len(sets)} prediction set(s); rests on "
                f"{grid.rests_on()}.")
    st.caption("Cell: ROC-AUC of the detector's step scores against step labels, on the labeled test steps of that "
               "action, mean ± sample std over its sets (seeds), with positives (+) and negatives (−) per set. "
               "A cell without positives or without negatives is undefined: grey, with the reason, never 0.5.")
    st.caption(dv.INTERVAL_CAPTION)
    for note in grid.notes:
        st.caption(note)
    backbones = grid.backbones
    facet, side_by_side = backbone_maps.choose(
        "Backbone", [*backbones, dv.ALL_BACKBONES], "grid_backbone", figure="MAADBench Figure 6", only_the_map=False,
        help="The heatmap, table and errors below are this backbone's; '(all backbones)' pools the backbones of the "
             "slice into one grid.")
    link.not_held("grid_backbone", "backbone", facet)
    shown = grid if facet != dv.ALL_BACKBONES else dv.compute_grid(cached.query, corpus, slice_, by_backbone=False, sets=sets)
    # One backbone's heatmap by default: every backbone's at once cost the browser about 0.5 s
    # on every open (bench/README.md, session 17).
    if side_by_side:
        st.plotly_chart(auroc_grid.heatmaps(grid, backbones), key="grid-heatmaps")
    else:
        st.columns([3, 2])[0].plotly_chart(auroc_grid.heatmaps(shown, [facet]), key="grid-heatmaps")
    text, num, titles = dv.wide_grid(shown, facet)
    actions = list(num["action"].iloc[:-1])
    detectors = list(grid.detectors["detector"])

    def pick_cell() -> None:
        # A click on a detector cell chooses its action and detector below (the bottom row:
        # all actions); callbacks run before the script, so the selectors show the choice.
        cell = auroc_grid.selected_cell(grid_key)
        if cell is None:
            return
        row, col = cell
        if col in titles and 0 <= row < len(num):
            st.session_state["detector"] = titles[col]
            st.session_state["action"] = num["action"].iloc[row]

    grid_key = f"grid-{corpus}-{facet}"
    st.caption("Click a detector's cell to list its errors below (the bottom row: over all actions).")
    auroc_grid.grid_table(text, num, grid_key, on_select=pick_cell)
    table(auroc_grid.long_cells(shown), f"grid-long-{corpus}", caption="The same grid, one row per cell (for download).",
          placeholder="—")
    table(auroc_grid.long_means(shown), f"grid-means-{corpus}", caption="The grid's means (the bottom row and the "
          "right column) with their intervals, one row per mean (for download).", placeholder="—")

    st.subheader("Errors behind a cell")
    c1, c2, c3 = st.columns([2, 3, 3])
    action = c1.selectbox("Action", [dv.ALL_ACTIONS, *actions], key="action", bind="query-params")
    detector = c2.selectbox("Detector", detectors, key="detector", bind="query-params")
    own_sets = list(sets.loc[sets["detector"] == detector, "set_id"])
    set_id = c3.selectbox("Prediction set (seed)", own_sets, key="set", bind="query-params")
    link.not_held("action", "action", action)
    link.not_held("detector", "detector", detector)
    link.not_held("set", "prediction set", set_id)
    errors = dv.cell_errors(cached.query, set_id, facet, action, slice_, view_mode, top_pct)
    if errors.empty:
        st.info("No false positive and no false negative in this cell for this set at its threshold.")
        return
    st.markdown(f"Threshold: **{md(errors['threshold_used'].iloc[0])}**, over all labeled test steps of the set in "
                "the slice (not only this cell's). Each link opens the step in the explorer, scored by this set.")
    for kind, order in (("false positive", "highest-scored first"), ("false negative", "lowest-scored first")):
        part = errors[errors["kind"] == kind]
        total = int(part["n_in_cell"].iloc[0]) if len(part) else 0
        st.markdown(f"**{kind.capitalize()}s** ({order}): {len(part)} of {total:,} shown.")
        if len(part):
            auroc_grid.errors_table(errors, kind, f"errors-{kind.split()[1]}")


def overall_tab() -> None:
    st.subheader("Overall comparison (MAADBench Figure 5)")
    with st.spinner("Scoring the detectors…"):
        overall = dv.compute_overall(cached.query, corpus, slice_, view_mode, top_pct, sets=sets)
    per = overall.per_detector
    if overall.per_set["n_steps"].sum() == 0:
        st.warning("No labeled test step of this slice is scored by these sets. Widen the filters in the sidebar.")
        return
    rested = overall.per_set
    st.markdown(f"Rests on {dv.span(rested['n_steps'])} labeled test steps of {dv.span(rested['n_runs'])} runs "
                f"per prediction set ({len(rested)} sets, {len(per)} detectors).")
    if dv.one_class_note(rested):
        st.info(dv.one_class_note(rested))  # our words and counts only
    st.caption("Per detector, over the labeled test steps of the slice: mean ± sample std over its sets (seeds). "
               "F1, accuracy and balanced accuracy need a decision: each set's own pred_label, or its top k% "
               "(the threshold column says which). Grouped by supervision, then family. Undefined values are blank.")
    if overall.baseline is None:
        st.warning(overall.notes[0])
    else:
        st.caption(f"Random baseline: **{md(overall.baseline)}**. Test against it: one-tailed (is the ROC-AUC above "
                   f"random's?) paired t-test (scipy.stats.ttest_rel) over shared seeds when there are at least "
                   f"{dv.MIN_SEEDS_FOR_TEST}, else Mann-Whitney U over unpaired seeds, else not possible (said per row).")
    label = st.selectbox("Chart", list(DETECTORS["metric"].choices), key="metric", bind="query-params")
    metric = dict(zip(DETECTORS["metric"].choices, dv.METRICS))[label]
    st.plotly_chart(auroc_grid.overall_chart(per, metric), key="overall-chart")
    table(auroc_grid.overall_frame(per), f"overall-{corpus}", placeholder="")
    st.caption(dv.OVERALL_INTERVAL_CAPTION)
    st.markdown("**Silent and loud anomalies, detected apart**")
    st.caption("Silent: label 1 in a scope (puzzle, or run) that still succeeded, so the outcome does not reveal it; "
               "loud: the scope failed. Recall of each at the threshold above; counts in the table "
               "(silent / loud anomalies). Blank where the slice has none of that kind.")
    st.plotly_chart(auroc_grid.silent_loud_chart(per), key="silent-loud-chart")
    with st.expander(f"Per prediction set ({len(overall.per_set)})"):
        table(auroc_grid.per_set_frame(overall.per_set), f"overall-sets-{corpus}", placeholder="")


def cost_tab() -> None:
    st.subheader("Cost beside accuracy (MAADBench Figure 10)")
    overall = dv.compute_overall(cached.query, corpus, slice_, view_mode, top_pct, sets=sets)
    if overall.per_set["n_steps"].sum() == 0:
        st.warning("No labeled test step of this slice is scored by these sets. Widen the filters in the sidebar.")
        return
    cost = dv.cost_table(overall)
    recorded = cost["reason"] == ""
    st.caption("ROC-AUC (mean over seeds) against the fit + score wall time and the peak memory the detector's job "
               "grew by, as recorded in each set's provenance (params). Released sets record none: blank, with the reason.")
    if recorded.any():
        st.plotly_chart(auroc_grid.cost_chart(cost[recorded]), key="cost-chart")
    else:
        st.info("No prediction set of this corpus records its cost (released sets do not); re-score a detector to see one.")
    table(auroc_grid.cost_frame(cost), f"cost-{corpus}", placeholder="")


def sets_tab() -> None:
    st.subheader("Prediction sets")
    st.caption("Every set about this corpus. Released sets (imported CSVs, judges) appear in the views wherever their "
               "granularity fits; run-level sets are compared on the Boards page (POST detection).")
    table(auroc_grid.sets_frame(sets_all), f"detector-sets-{corpus}")


for tab, draw in zip(tabs, (grid_tab, overall_tab, cost_tab, sets_tab)):
    if not tab.open:
        continue
    with tab:
        draw()
