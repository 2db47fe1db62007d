"""Propagation: how one failed step leads to later failures (heatmaps per backbone, the chains
behind a cell, a chain browser, recall by chain role, failure modes, silent vs loud)."""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.analyses import anomaly_propagation as P
from auditatlas.views import not_held
from auditatlas.views.pages import PROPAGATION, PROPAGATION_TABS, RULES
from components import backbone_maps, cached, export_button, view_state
from components import propagation_view as view
from components.charts import rate_heatmap
from components.filters import describe
from components.safe import md
from components.safe import plotly as esc
from components.tables import table

slice_ = st.session_state.get("slice", {})
CHART_KEY = "propagation-heatmap"
CELL_KEYS = ("cell_backbone", "src_action", "later_action")


st.title("Propagation")
st.caption("Within one scope (the same run and puzzle; the run for corpora without puzzles), does a failed step "
           "come with later failures? A chain is the sorted failed steps of one scope when there are at least two: "
           "the first is its origin, the last its down step, the rest mid (MAADBench Figures 4, 8 and 11).")
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(PROPAGATION)
export_button.draw(PROPAGATION)

sources = P.step_counts(cached.query, slice_)
corpora = P.corpora(sources, P.chain_counts(cached.query, slice_))
if corpora.empty:
    st.warning("This slice holds no runs. Widen the filters in the sidebar.")
    st.stop()
status = P.chain_status(corpora)
chains_in_slice = int(corpora["chains"].sum())
st.markdown(f"**{md(describe(slice_))}**: {int(corpora['runs'].sum()):,} runs, {int(corpora['steps'].sum()):,} steps, "
            f"{int(corpora['failed_steps'].sum()):,} failed steps, {chains_in_slice:,} chains.")
for corpus, reason in status.reasons.items():
    st.caption(f"{md(corpus)} has no chains here: {md(reason)}.")
known = cached.query("corpora")
simulated = sorted(set(known.loc[known["kind"] == "simulated", "corpus"]) & set(corpora["corpus"]))
if simulated:
    st.caption(f"Simulated data ({md(', '.join(simulated))}): explore the tool with it, do not cite its numbers.")

tabs = st.tabs(list(PROPAGATION_TABS), key="tab", bind="query-params")


def no_chains() -> None:
    st.info("There are no propagation chains in this slice: no scope holds two or more failed steps "
            "(see the reasons above), so there is no heatmap, chain or role to show. "
            "The Silent vs loud and Failure modes tabs still apply.")


# --- Heatmap and the chains behind a cell --------------------------------------------------------


def select_cell_from_chart() -> None:
    """Chart click → the three cell selectors (they are bound to the URL, so the link follows)."""
    cell = view.selected_cell(st.session_state.get(CHART_KEY))
    if cell:
        for key, value in zip(CELL_KEYS, cell):
            st.session_state[key] = value
        st.session_state["cell_page"] = 1


def reset_cell_page() -> None:
    st.session_state["cell_page"] = 1


def heatmap_section() -> None:
    cells = P.heatmap(sources, P.followed_counts(cached.query, slice_), P.possible_pairs(cached.query))
    st.subheader("Propagation heatmap per backbone (MAADBench Figure 4)")
    st.caption("Cell = share of failed steps of the row's action followed, later in the same scope, by at least one "
               "failed step of the column's action. n under a row = its failed source steps. \"–\": the action never "
               "failed for that backbone. Grey: no scope in the store has the column's action after the row's, so "
               "the pair cannot occur. Click a cell to list its chains.")
    drawn = heatmap_backbones(cells)
    # One backbone's map by default: five maps at once cost the browser about 0.3 s more on
    # every open (bench/README.md, session 17); side by side on demand.
    where = st if len(drawn) > 1 else st.columns([3, 2])[0]
    where.plotly_chart(view.heatmaps(cells[cells["backbone"].isin(drawn)]), key=CHART_KEY,
                       on_select=select_cell_from_chart, selection_mode="points", config={"displayModeBar": False})
    legend = ", ".join(f"{P.action_label(a)} = {a}" for a in P.action_order(cells["src_action"])
                       if P.action_label(a) != a)
    if legend:
        st.caption(md(legend))
    with st.expander("Every cell with its counts"):
        table(cells.assign(rate_pct=(100 * cells["rate"]).round(1)).drop(columns="rate"), "propagation-heatmap")
    cell_section(cells)


def heatmap_backbones(cells) -> list[str]:
    """The backbones whose maps are drawn: the chosen one (the link's cell's backbone when the
    link names no map), or every one side by side."""
    backbones = sorted(cells["backbone"].unique())
    cell = link.values["cell_backbone"]
    shown, side_by_side = backbone_maps.choose("Heatmap of backbone", backbones, "map_backbone",
                                               figure="MAADBench Figure 4",
                                               index=backbones.index(cell) if cell in backbones else 0)
    link.not_held("map_backbone", "backbone", shown)
    return backbones if side_by_side else [shown]


def cell_section(cells) -> None:
    st.subheader("Chains behind a cell")
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
        st.caption("Click a heatmap cell, or choose a backbone and both actions, to list the chains behind it.")
        return
    cell = cells[(cells["backbone"] == backbone) & (cells["src_action"] == src) & (cells["later_action"] == later)]

    def cell_rate() -> None:
        if not cell.empty and int(cell["failed"].iloc[0]) > 0:
            c = cell.iloc[0]
            st.markdown(f"**{md(backbone)}**: {int(c.followed):,} of {int(c.failed):,} failed {md(src)} steps "
                        f"({100 * c.rate:.1f}%) are followed by a failed {md(later)} step in their scope.")

    chain_list("cell_page", lambda n: P.cell_chains(cached.query, slice_, backbone, src, later, page=n),
               counted="source steps", step_column="source_step", table_key="cell-chains", lead=cell_rate,
               empty="No chain behind this cell: no failed step of the source action is followed by a failed "
                     "step of the later action in this slice.")


def chain_list(page_key: str, rows_of_page, *, counted: str, step_column: str, table_key: str, empty: str,
               lead=None) -> None:
    """One page of chains (the page number bound to the URL as ``page_key``), each linking to the
    explorer at its ``step_column``; ``lead`` draws what stands above it whatever the count."""
    page = st.columns([1, 4])[0].number_input("Page", min_value=1, step=1, key=page_key, bind="query-params")
    rows, total, page = paged(rows_of_page, int(page))
    if lead is not None:
        lead()
    if total == 0:
        st.info(empty)
        return
    at = "the source step" if step_column == "source_step" else "its origin step"
    st.caption(f"Page {int(page)} of {P.page_count(total)} ({total:,} {counted}); each links to the trace "
               f"explorer at {at}.")
    table(P.chain_table(rows, step_column), table_key, column_config=_link_config())


# --- Silent vs loud: its own tab, so the heatmap's first open draws one chart (its second chart
# and tables cost a cold open about 0.3 s more; bench/README.md, session 18) -------------------


def silent_section() -> None:
    st.subheader("Silent vs loud (MAADBench Table 4)")
    counts = P.silent_counts(cached.query, slice_)
    if counts.empty:
        st.info("No failed step in this slice.")
        return
    st.caption("An anomaly is silent when its puzzle (or, without puzzles, its run) still succeeded; loud when it "
               "failed. Formatting errors are counted apart. Cell: silent share of action failures, n = failures.")
    by_action = P.silent_by_action(counts)
    shown = by_action.assign(backbone=by_action["backbone"].map(esc),
                             action=by_action["action"].map(lambda a: esc(P.action_label(a))))
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.plotly_chart(rate_heatmap(shown, "backbone", "action", "silent_pct", "action_failures",
                                     col_order=[esc(P.action_label(a)) for a in P.action_order(counts["action"])],
                                     colorscale="Blues"), key="silent-heatmap")
    with right:
        by_backbone = P.silent_by_backbone(counts)
        table(by_backbone[["backbone", "action_failures", "silent_pct", "format_errors", "format_silent_pct",
                           "anomalies_without_scope_outcome"]].round(1),
              "silent-by-backbone", caption="Per backbone: silent % of action failures and of formatting errors")
    with st.expander("Per backbone and action, with counts"):
        table(by_action.round(1), "silent-by-action")


def paged(rows_of_page, page: int):
    """Rows of ``page`` with the total before paging; a page past the end falls back to page 1."""
    rows, total, page, said = P.paged(rows_of_page, page)
    if said:
        view_state.report([said])
    return rows, total, page


def _link_config() -> dict:
    return {"explorer": st.column_config.LinkColumn("explorer", display_text="open step",
                                                    help="The trace explorer at this step")}


# --- Chain browser ----------------------------------------------------------------------------


def chains_section() -> None:
    lengths = P.chain_lengths(cached.query, slice_)
    st.subheader("Chain lengths per backbone")
    st.caption("Over every chain of the slice (the browser's filters below do not apply); hover for counts.")
    st.plotly_chart(view.length_distribution(lengths), key="chain-lengths")
    st.subheader("Chain browser")
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
        c2.caption("Every chain here has length 2.")
    asked = link.asked["length"]
    if asked and tuple(asked) != (low, high):
        view_state.report([not_held("chain lengths", f"{asked[0]} to {asked[1]}", f"showing lengths {low} to {high} "
                                    f"(the longest chain here has {longest} failed steps)")])
    chain_list("chain_page", lambda n: P.chains(cached.query, slice_, chosen, low, high, page=n),
               counted="chains", step_column="origin_step", table_key="chains", empty="No chain matches these filters.")


# --- Recall by role -----------------------------------------------------------------------------


def roles_section() -> None:
    st.subheader("Recall by chain role (MAADBench Figures 8 and 11)")
    sets = P.step_sets(cached.query, slice_)
    sets = sets[sets["corpus"].isin(status.chain_corpora)]
    if sets.empty:
        st.info("No step-level prediction set about the corpora with chains in this slice. Load one with "
                "`auditatlas ingest predictions` or re-score a detector.")
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
    rows = P.role_recall_counts(cached.query, slice_, top_pct)
    per_set = P.role_recall(rows)
    if per_set.empty:
        st.info("The step-level sets here flag nothing on the anomalous steps of this slice"
                + (" (they carry no labels of their own: try top_pct)." if top_pct is None else "."))
        return
    st.caption(("Flagged = the set's own label. " if top_pct is None else
                f"Flagged = score among the top {top_pct:g}% of the set's scored steps in the slice (ties at the cut "
                "all flagged). ")
               + "Recall on a role = share of its anomalous steps flagged; in isolation = the same actions' recall "
               "over all anomalies, weighted by the role's action mix; delta = role - isolation. Training rows "
               "(split 'train') are left out.")
    averages = P.role_averages(per_set, sets)
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.plotly_chart(view.role_recall_bars(averages), key="role-bars")
    with right:
        (first, key, caption), *rest = view.role_recall_tables(per_set, averages, sets)
        table(first, key, caption=caption)
    for frame, key, caption in rest:
        table(frame, key, caption=caption)




# --- Failure modes ------------------------------------------------------------------------------


def failure_modes_section() -> None:
    st.subheader("MAST failure modes per backbone")
    rows = P.failure_mode_counts(cached.query, slice_)
    if rows.empty:
        st.info("No failed step in this slice.")
        return
    modes = P.failure_modes(rows)
    st.caption("Share of each backbone's failed steps per failure mode; FM-5 is error propagation (a failure after an "
               "earlier failure in the same scope, the cascade). \"not recorded\": the trace gives no mode.")
    st.plotly_chart(view.failure_mode_bars(modes), key="failure-modes")
    table(modes.round(1), "failure-modes")
    with st.expander("Error codes behind each failure mode"):
        table(P.failure_mode_codes(rows), "failure-mode-codes")


for name, tab in zip(PROPAGATION_TABS, tabs):
    if not tab.open:
        continue
    with tab:
        if name == "Failure modes":  # these two need no chain
            failure_modes_section()
        elif name == "Silent vs loud":
            silent_section()
        elif not status.has_chains:
            no_chains()
        elif name == "Heatmap":
            heatmap_section()
        elif name == "Chains":
            chains_section()
        else:
            roles_section()
