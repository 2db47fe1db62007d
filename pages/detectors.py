"""Detectors: per-action AUROC grid, overall comparison and cost, over every step-level
prediction set of a corpus (re-scored and released alike), on the sidebar slice.

The content is ``auditatlas.views.detectors_view``'s; this file holds the pickers and tabs."""
from __future__ import annotations

from dataclasses import replace

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.analyses import detector_comparison as dv
from auditatlas.figures.detectors import heatmap_cell
from auditatlas.set_labels import set_labels
from auditatlas.views import detectors_view as view
from auditatlas.views.pages import DETECTOR_TABS, DETECTOR_VIEW_MODES, DETECTORS, RULES
from components import backbone_maps, cached, export_button, view_blocks, view_state
from components.safe import md

slice_ = st.session_state.get("slice", {})

st.title(DETECTORS.title)
view_blocks.draw(view.intro(slice_))
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(DETECTORS)
export_button.draw(DETECTORS)

with_steps = dv.step_set_corpora(cached.query, slice_)
if with_steps.empty:
    view_blocks.draw(view.nothing_to_compare(cached.query, slice_))
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
state, comparable = view.sets_state(corpus, sets_all, sets)
view_blocks.draw(state)
if not comparable:
    st.stop()

TABS = list(DETECTOR_TABS)
tabs = st.tabs(TABS, key="tab", bind="query-params")


def grid_tab() -> None:
    st.subheader(view.GRID_HEADING)
    with st.spinner("Scoring the grid…"):
        grid = cached.grid(corpus, slice_, by_backbone=True, sets=sets)
    head, drawable = view.grid_head(grid, sets)
    view_blocks.draw(head)
    if not drawable:
        return
    backbones = grid.backbones
    facet, side_by_side = backbone_maps.choose(
        "Backbone", [*backbones, dv.ALL_BACKBONES], "grid_backbone", figure="MAADBench Figure 6", only_the_map=False,
        help="The grid and errors below are this backbone's; '(all backbones)' pools the backbones of the "
             "slice into one grid.")
    link.not_held("grid_backbone", "backbone", facet)
    shown = grid if facet != dv.ALL_BACKBONES else cached.grid(corpus, slice_, by_backbone=False, sets=sets)

    def pick_from_map() -> None:
        # A click on a heatmap cell chooses its backbone, action and detector below, as the
        # table's cells do (and as the propagation heatmap opens its cell).
        state = st.session_state.get("grid-heatmaps") or {}
        points = (state.get("selection") or {}).get("points") or []
        cell = next((found for found in map(heatmap_cell, points) if found), None)
        if cell is None:
            return
        backbone, action, detector = cell
        if side_by_side:
            st.session_state["grid_backbone"] = backbone
        st.session_state["action"], st.session_state["detector"] = action, detector

    view_blocks.draw(view.grid_maps(grid, side_by_side), on_select={"grid-heatmaps": pick_from_map})
    # On screen each cell is its number; the CSV and the long table below carry intervals and counts.
    table, num, titles = view.grid_table(shown, corpus, facet)
    actions = list(num["action"].iloc[:-1])
    detectors = list(grid.detectors["detector"])

    def pick_cell() -> None:
        # A click on a detector cell chooses its action and detector below (the bottom row:
        # all actions); callbacks run before the script, so the selectors show the choice.
        cell = view_blocks.selected_cell(table.name)
        if cell is None:
            return
        row, col = cell
        if col in titles and 0 <= row < len(num):
            st.session_state["detector"] = titles[col]
            st.session_state["action"] = num["action"].iloc[row]

    # The hint above names the backbone; the table's caption is the export's.
    view_blocks.draw([view.grid_hint(facet, side_by_side), replace(table, caption=None)],
                     on_select={table.name: pick_cell})
    view_blocks.draw(view.grid_long(shown, corpus))

    st.subheader(view.ERRORS_HEADING)
    c1, c2, c3 = st.columns([2, 3, 3])
    action = c1.selectbox("Action", [dv.ALL_ACTIONS, *actions], key="action", bind="query-params")
    detector = c2.selectbox("Detector", detectors, key="detector", bind="query-params")
    own_sets = list(sets.loc[sets["detector"] == detector, "set_id"])
    # By id: a widget bound to the URL writes the option's text there, and a link names the set by its id.
    set_names = set_labels(sets.loc[sets["detector"] == detector].to_dict("records"))
    set_id = c3.selectbox("Prediction set (seed)", own_sets, key="set", bind="query-params",
                          help="; ".join(f"{s}: {set_names[s]}" for s in own_sets) or None)
    link.not_held("action", "action", action)
    link.not_held("detector", "detector", detector)
    link.not_held("set", "prediction set", set_id)
    view_blocks.draw(view.cell_errors(cached.query, set_id, facet, action, slice_, rule, top_pct))


def overall_tab() -> None:
    st.subheader(view.OVERALL_HEADING)
    with st.spinner("Scoring the detectors…"):
        overall = dv.compute_overall(cached.query, corpus, slice_, view_mode, top_pct, sets=sets)
    head, drawable = view.overall_head(overall)
    view_blocks.draw(head)
    if not drawable:
        return
    label = st.selectbox("Chart", list(DETECTORS["metric"].choices), key="metric", bind="query-params")
    view_blocks.draw(view.overall_body(overall, label, corpus))


def cost_tab() -> None:
    view_blocks.draw(view.cost(dv.compute_overall(cached.query, corpus, slice_, view_mode, top_pct, sets=sets), corpus))


def sets_tab() -> None:
    view_blocks.draw(view.prediction_sets(sets_all, corpus))


for _name, tab, draw in zip(TABS, tabs, (grid_tab, overall_tab, cost_tab, sets_tab)):
    if not tab.open:
        continue
    with tab:
        draw()
