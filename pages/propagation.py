"""Propagation: how one failed step leads to later failures (heatmaps per backbone, the chains
behind a cell, a chain browser, recall by chain role, failure modes, silent vs loud).

The content is ``auditatlas.views.propagation_view``'s; this file holds the tabs, the pickers
and the clickable heatmap (one backbone's a coloured table, every backbone's a Plotly figure)."""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.analyses import anomaly_propagation as P
from auditatlas.figures.propagation import selected_cell
from auditatlas.views import propagation_view as view
from auditatlas.views.pages import PROPAGATION, PROPAGATION_TABS, RULES
from components import backbone_maps, cached, export_button, view_blocks, view_state

slice_ = st.session_state.get("slice", {})
CHART_KEY = "propagation-heatmap"
CELL_KEYS = ("cell_backbone", "src_action", "later_action")

st.title(PROPAGATION.title)
view_blocks.draw(view.intro())
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(PROPAGATION)
export_button.draw(PROPAGATION)

head, state = view.summary(cached.query, slice_)
view_blocks.draw(head)
if state is None:
    st.stop()

tabs = st.tabs(list(PROPAGATION_TABS), key="tab", bind="query-params")


# --- Heatmap and the chains behind a cell --------------------------------------------------------


def select_cell_from_chart() -> None:
    """Chart click → the three cell selectors (they are bound to the URL, so the link follows)."""
    cell = selected_cell(st.session_state.get(CHART_KEY))
    if cell:
        for key, value in zip(CELL_KEYS, cell):
            st.session_state[key] = value
        st.session_state["cell_page"] = 1


def reset_cell_page() -> None:
    st.session_state["cell_page"] = 1


def heatmap_section() -> None:
    cells = view.heatmap_cells(cached.query, slice_, state.sources)
    view_blocks.draw(view.heatmap_head())
    shown, side_by_side = heatmap_backbone(cells)
    if side_by_side:
        st.plotly_chart(view.heatmap_figure(cells), key=CHART_KEY, on_select=select_cell_from_chart,
                        selection_mode="points", config={"displayModeBar": False})
    else:
        table, grid = view.heatmap_table(cells, shown)

        def select_cell_from_table() -> None:
            # A click on a share chooses its cell, as a click on the heatmap does.
            cell = view_blocks.selected_cell(table.name)
            if cell is not None and cell[1] in grid.columns and 0 <= cell[0] < len(grid.rows):
                for key, value in zip(CELL_KEYS, (shown, grid.rows[cell[0]], grid.columns[cell[1]])):
                    st.session_state[key] = value
                st.session_state["cell_page"] = 1

        view_blocks.draw([table], on_select={table.name: select_cell_from_table})
    view_blocks.draw(view.heatmap_tail(cells, side_by_side))
    cell_section(cells)


def heatmap_backbone(cells) -> tuple[str, bool]:
    """The backbone whose map is drawn (the link's cell's backbone when the link names no map),
    and whether every backbone's is drawn side by side."""
    backbones = sorted(cells["backbone"].unique())
    cell = link.values["cell_backbone"]
    shown, side_by_side = backbone_maps.choose("Heatmap of backbone", backbones, "map_backbone",
                                               figure="MAADBench Figure 4",
                                               index=backbones.index(cell) if cell in backbones else 0)
    link.not_held("map_backbone", "backbone", shown)
    return shown, side_by_side


def cell_section(cells) -> None:
    st.subheader(view.CELL_HEADING)
    backbones = sorted(cells["backbone"].unique())
    acts = P.action_order(cells["src_action"])
    c1, c2, c3 = st.columns(3)
    backbone = c1.selectbox("Backbone", backbones, index=None, key="cell_backbone", bind="query-params",
                            on_change=reset_cell_page)
    src = c2.selectbox("Failed source action", acts, index=None, key="src_action", bind="query-params",
                       on_change=reset_cell_page)
    later = c3.selectbox("Later failed action", acts, index=None, key="later_action", bind="query-params",
                         on_change=reset_cell_page)
    for name, what, chosen in (("cell_backbone", "backbone", backbone), ("src_action", "source action", src),
                               ("later_action", "later action", later)):
        link.not_held(name, what, chosen, instead=f"showing '{chosen}' instead" if chosen else "no cell is chosen")
    if not (backbone and src and later):
        view_blocks.draw(view.no_cell())
        return
    page = page_input("cell_page")
    view_blocks.draw(view.cell_chains(cached.query, slice_, cells, backbone, src, later, page))


def page_input(key: str) -> int:
    """The page of chains shown (bound to the URL as ``key``)."""
    return int(st.columns([1, 4])[0].number_input("Page", min_value=1, step=1, key=key, bind="query-params"))


# --- Chain browser ----------------------------------------------------------------------------


def chains_section() -> None:
    lengths = P.chain_lengths(cached.query, slice_)
    view_blocks.draw(view.lengths_figure(lengths))
    origins = P.action_order(lengths["origin_action"])
    longest = int(lengths["length"].max())
    c1, c2 = st.columns([2, 1])
    chosen = c1.multiselect("Origin action", origins, key="origin", bind="query-params",
                            on_change=lambda: st.session_state.update(chain_page=1))
    link.not_held_items("origin", "origin action", origins)
    if longest > 2:
        low, high = c2.slider("Length", min_value=2, max_value=longest, value=(2, longest), key="length",
                              bind="query-params", on_change=lambda: st.session_state.update(chain_page=1))
    else:
        low = high = 2
        with c2:
            view_blocks.draw(view.one_length())
    view_blocks.draw(view.lengths_not_held(link.asked["length"], low, high, longest))
    page = page_input("chain_page")
    view_blocks.draw(view.browser_chains(cached.query, slice_, chosen, low, high, page))


# --- Recall by role -----------------------------------------------------------------------------


def roles_section() -> None:
    head, sets = view.roles_head(cached.query, slice_, state.status.chain_corpora)
    view_blocks.draw(head)
    if sets is None:
        return
    c1, c2 = st.columns([1, 1])
    rule = c1.segmented_control("Flagged by", RULES, default=PROPAGATION["rule"].default, key="rule",
                                bind="query-params", required=True,
                                help="own: the set's own labels; top_pct: its top share of scored steps")
    top_pct = None  # None: the sets' own labels
    if rule == "top_pct":
        share = PROPAGATION["top_pct"]
        top_pct = c2.number_input("top share (% of the set's scored steps in the slice)", min_value=share.low,
                                  max_value=share.high, value=share.default, step=1.0, key="top_pct",
                                  bind="query-params")
    view_blocks.draw(view.roles_body(cached.query, slice_, sets, top_pct))


# Silent vs loud has its own tab, so the heatmap's first open draws one chart (its second chart
# and tables cost a cold open about 0.3 s more).
for name, tab in zip(PROPAGATION_TABS, tabs):
    if not tab.open:
        continue
    with tab:
        if name == "Failure modes":  # these two need no chain
            view_blocks.draw(view.failure_modes(cached.query, slice_))
        elif name == "Silent vs loud":
            view_blocks.draw(view.silent(cached.query, slice_))
        elif not state.status.has_chains:
            view_blocks.draw(view.no_chains())
        elif name == "Heatmap":
            heatmap_section()
        elif name == "Chains":
            chains_section()
        else:
            roles_section()
