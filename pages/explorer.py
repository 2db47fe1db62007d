"""Explorer: the slice's runs, one run's dependency graph with ground truth and a detector's flags,
its steps in full, the judges' picks, and text search. The URL holds the whole view.

The content is ``auditatlas.views.explorer_view``'s; this file holds the run list's and the
search's controls, the set and rule pickers, the graph's options, the selectable tables and
the step selector."""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

import pandas as pd

from auditatlas import graph as tg
from auditatlas.run_labels import names_of
from auditatlas.set_labels import set_labels
from auditatlas.views import EXPLORER, labels_of
from auditatlas.views import explorer_view as view
from components import cached, export_button, trace_graph, view_blocks, view_state
from components import explorer_links as links
from components import explorer_lists as lists

slice_ = st.session_state.get("slice", {})
# No widget here is bound to the URL: the callbacks below write it, so it is the one truth.
link_view = view_state.read(EXPLORER, bound=False, show=False)
state = links.from_values(link_view.values, st.query_params, link_view.problems)
SEARCH_PAGE_SIZE = 50
# How often the run list looks for runs received since it was drawn (a receiver writing traces
# in): a stat of the store's manifest, and one cached count once the store changed.
LIVE_EVERY_S = 5.0
SNIPPET_CONTEXT = 60


# ---------------------------------------------------------------------------------------------
# URL updates (widget callbacks run before the next script run, so the URL stays the one truth)


def _update(**changes) -> None:
    current = links.read(st.query_params)
    for name, value in changes.items():
        setattr(current, name, value)
    view_state.write(EXPLORER, links.url_values(current))


def open_run(run_id: str) -> None:
    _update(run=run_id, step=None, expand=[])


def open_step(run_id: str, step: int) -> None:
    _update(run=run_id, step=step, expand=[])


def _from_widget(key: str, name: str) -> None:
    _update(**{name: st.session_state[key]})


def _rule_changed() -> None:
    mode, value = st.session_state["explorer_rule"], st.session_state["explorer_rule_value"]
    if mode == "top_k":
        _update(top_k=int(value) if value is not None else None, threshold=None, decide="rank")
    else:
        _update(threshold=float(value) if value is not None else None, top_k=None, decide="rank")


def _rule_mode_changed() -> None:
    mode = st.session_state["explorer_rule"]
    if mode == "own":
        _update(decide="own", top_k=None, threshold=None)
    elif mode == "top_k":
        _update(top_k=links.DEFAULT_TOP_K, threshold=None, decide="rank")
    else:
        _update(threshold=st.session_state.get("explorer_threshold_default", 0.5), top_k=None, decide="rank")


set_names: dict[str, str] = {}  # the open run's prediction sets by their labels (rule_controls)
RULE_WORDS = {"top_k": "top-k steps of the run", "threshold": "steps scoring ≥ a cut",
              "own": "the set's own decisions"}


# ---------------------------------------------------------------------------------------------

st.title(EXPLORER.title)
view_blocks.draw(view.intro())
view_state.report(state.problems)

# --- The run list ----------------------------------------------------------------------------
with st.expander(view.RUNS_HEADING, expanded=state.run is None):
    request = lists.run_list_controls(cached.query("slice_options"))
    count_params = {k: v for k, v in request.params.items() if k not in ("sort", "descending")}
    listed_stamp = cached.store_stamp()  # the store version the list is drawn from
    total = int(cached.query("explorer_runs_count", {"slice": slice_, **count_params})["total"].iloc[0])
    page, pages = lists.page_number("runs_page", total, request.page_size)
    params = {"slice": slice_, **request.params, "limit": request.page_size, "offset": (page - 1) * request.page_size}
    runs_page = cached.query("explorer_runs", params)
    view_blocks.draw(view.run_list_page(total, page, pages))
    if total:
        lists.run_table(runs_page.drop(columns=["total"], errors="ignore"), state.run, "runs-table", open_run,
                        names_of(cached.query, runs_page["run"]))
    lists.pager("runs_page", pages)



@st.fragment(run_every=LIVE_EVERY_S)
def new_runs_notice(count_query: dict, seen_total: int, seen_stamp: int) -> None:
    """Runs received since the list was drawn, offered with a button that draws it again (only
    this fragment reruns on its timer: the page stays as it is until the reader asks)."""
    if cached.store_stamp() == seen_stamp:
        return
    now = int(cached.query("explorer_runs_count", count_query)["total"].iloc[0])
    if now <= seen_total:
        return
    notice, button = st.columns([4, 1], vertical_alignment="center")
    with notice:
        view_blocks.draw(view.new_runs(now - seen_total))
    if button.button("Show them", key="explorer_new_runs"):
        st.rerun(scope="app")


new_runs_notice({"slice": slice_, **count_params}, total, listed_stamp)

# --- Text search -----------------------------------------------------------------------------
with st.expander("Search the slice's step text", expanded=bool(state.q)):
    actions_in_slice = view.actions_in_slice(cached.query, slice_)
    view_blocks.draw(view.unknown_actions([a for a in state.actions if a not in actions_in_slice]))
    st.session_state["search_q"] = state.q
    st.session_state["search_actions"] = [a for a in state.actions if a in actions_in_slice]
    s1, s2, s3 = st.columns([3, 2, 1])
    s1.text_input("Phrase (case-insensitive)", key="search_q", on_change=_from_widget, args=("search_q", "q"),
                  placeholder="e.g. compass, TOOL_RESULT, exitcode")
    s2.multiselect("Actions", actions_in_slice, key="search_actions", on_change=_from_widget,
                   args=("search_actions", "actions"))
    field = s3.selectbox("Look in", ["both", "input", "output"], key="search_field")
    if state.q:
        search_params = {"slice": slice_, "regex": lists.phrase_regex(state.q), "phrase": state.q,
                         "actions": st.session_state["search_actions"], "field": field, "label": "any",
                         "context": SNIPPET_CONTEXT}
        first = cached.query("step_text_scan", {**search_params, "limit": 1, "offset": 0})
        n_hits = int(first["total"].iloc[0]) if len(first) else 0
        hit_page, hit_pages = lists.page_number("search_page", n_hits, SEARCH_PAGE_SIZE)
        hits = cached.query("step_text_scan", {**search_params, "limit": SEARCH_PAGE_SIZE,
                                                "offset": (hit_page - 1) * SEARCH_PAGE_SIZE})
        view_blocks.draw(view.search_page(0 if hits.empty else n_hits, hit_page, hit_pages))
        if not hits.empty:
            base = links.page_base(st.context.url)
            hit_links = [links.link(slice_, state, base=base, run=r, step=int(s), expand=[])
                         for r, s in zip(hits["run"], hits["step"])]
            lists.search_table(hits, hit_links, "search-table", open_step, names_of(cached.query, hits["run"]))
        lists.pager("search_page", hit_pages)


# --- The open run ----------------------------------------------------------------------------


def rule_controls(run_sets: pd.DataFrame) -> tuple[str | None, tg.DecisionRule | None]:
    """Prediction set and decision rule; returns the chosen set and rule (or None, None)."""
    ids = run_sets["set_id"].tolist()
    chosen = state.set_id if state.set_id in ids else None
    view_blocks.draw(view.set_not_drawn(cached.query, state.set_id, ids))
    c1, c2, c3 = st.columns([4, 2, 2])
    st.session_state["explorer_set"] = chosen
    set_names.update(set_labels(run_sets.to_dict("records")))
    c1.selectbox("Prediction set (detector or judge)", [None] + ids, key="explorer_set", placeholder="none",
                 format_func=lambda s: "none" if s is None else set_names.get(s, s), on_change=_from_widget,
                 disabled=not ids, args=("explorer_set", "set_id"),
                 help="Step-level prediction sets that score this run, by method, protocol, model and seed (the "
                      "set's id is in the link and the Detectors page's Prediction sets tab).")
    if chosen is None:
        if not ids:
            with c2:
                view_blocks.draw(view.no_set_scores())
        return None, None
    row = run_sets.loc[run_sets["set_id"] == chosen].iloc[0]
    st.session_state["explorer_threshold_default"] = float(row["max_score"])
    rule = state.rule
    mode = "own" if "own" in rule else ("top_k" if "top_k" in rule else "threshold")
    st.session_state["explorer_rule"] = mode
    c2.selectbox("Flag", ["top_k", "threshold", "own"], key="explorer_rule", on_change=_rule_mode_changed,
                 format_func=RULE_WORDS.get,
                 help="Own decisions: the steps the set itself flagged (its pred_label), as the Detectors page "
                      "lists a set's errors by default.")
    if mode == "own":
        return chosen, tg.DecisionRule(own=True)
    if mode == "top_k":
        st.session_state["explorer_rule_value"] = int(rule["top_k"])
        c3.number_input("k", min_value=0, step=1, key="explorer_rule_value", on_change=_rule_changed,
                        help="Flag the k steps the set ranks highest in this run.")
        return chosen, tg.DecisionRule(top_k=int(rule["top_k"]))
    st.session_state["explorer_rule_value"] = float(rule["threshold"])
    c3.number_input("score cut", key="explorer_rule_value", on_change=_rule_changed, format="%.4g",
                    help=f"Flag steps scoring at least this. Scores on this run: "
                         f"{row['min_score']:.4g} to {row['max_score']:.4g}.")
    return chosen, tg.DecisionRule(threshold=float(rule["threshold"]))


def step_table(frame: pd.DataFrame, selected: int | None, run_id: str) -> None:
    key = f"steps-{abs(hash((run_id, selected)))}"

    def chosen() -> None:
        picked = st.session_state[key]["selection"]["rows"]
        if picked:
            _update(step=int(frame.iloc[picked[0]]["step"]))

    st.dataframe(frame, hide_index=True, key=key, on_select=chosen, selection_mode="single-row",
                 selection_default={"selection": {"rows": [selected]}} if selected is not None else None,
                 width="stretch", height=min(38 + 35 * len(frame), 560), placeholder="—",
                 column_config={"step": st.column_config.NumberColumn("step", width="small", pinned=True),
                                "score": st.column_config.NumberColumn("score", format="%.4g")})


def graph_options(run: view.RunGraph) -> list[str]:
    """Fill, lanes, inferred context edges and the open scopes; returns the scopes opened."""
    o1, o4, o2, o3 = st.columns([2, 2, 3, 3])
    st.session_state["explorer_color"] = state.color
    o1.selectbox("Fill by", ["agent", "action"], key="explorer_color", on_change=_from_widget,
                 args=("explorer_color", "color"))
    st.session_state["explorer_lanes"] = state.lanes
    o4.selectbox("One row per", list(tg.LANES), key="explorer_lanes", on_change=_from_widget,
                 args=("explorer_lanes", "lanes"),
                 help="A run that is one scope (a trace of your own, Who&When, tau-bench) reads best one row per agent.")
    if run.has_context:
        st.session_state["explorer_context"] = state.context
        o2.toggle("Show inferred full-context edges", key="explorer_context", on_change=_from_widget,
                  args=("explorer_context", "context"),
                  help="Every step of this corpus saw the whole earlier history; those n(n-1)/2 edges are "
                       "inferred, not recorded, and hide the hand-off chain, so they start hidden.")
    if len(run.steps) <= tg.COLLAPSE_ABOVE:
        return []
    view_blocks.draw(view.unknown_scopes(run, state.expand))
    st.session_state["explorer_expand"] = [s for s in state.expand if s in run.scopes]
    o3.multiselect("Open scopes", run.scopes, key="explorer_expand", on_change=_from_widget,
                   args=("explorer_expand", "expand"),
                   help=f"Runs over {tg.COLLAPSE_ABOVE} steps start with each scope collapsed to one node.")
    return st.session_state["explorer_expand"]


def run_view(run: dict) -> None:
    run_id = str(run["run_id"])
    n = int(run["n_steps"])
    view_blocks.draw(view.run_head(run, slice_))
    selected, problems = view.open_step(n, state.step, state.step_text)
    view_blocks.draw(problems)

    set_id, rule = rule_controls(cached.query("explorer_run_sets", {"run": run_id}))
    graph = view.run_graph(cached.query, run_id, labels_of(slice_), set_id, rule, state.lanes)
    opened = graph_options(graph)
    collapsed = view.collapsed_scopes(graph, opened, selected)
    view_blocks.draw(view.collapsed_note(graph, collapsed, "open them above" + (
        ", the open step's scope is shown." if selected is not None else ".")))
    view_blocks.draw(view.confusion(graph, set_names.get(set_id)))

    # The graph takes the page's whole width (it wraps its rows to the width it gets, so more
    # width means fewer rows); the step table follows it.
    view_blocks.draw(view.graph(graph, selected, state.color, state.context, collapsed, render=trace_graph.cached_page))
    frame = view.steps_table(graph)
    step_table(frame, selected, run_id)
    options = [None] + list(range(n))
    st.session_state["explorer_step"] = selected
    st.selectbox("Step", options, key="explorer_step", on_change=_from_widget, args=("explorer_step", "step"), placeholder="none",
                 format_func=lambda i: "none" if i is None else f"{i} · {frame.loc[i, 'action']} · {frame.loc[i, 'truth']}")

    view_blocks.draw(view.step_section(cached.query, run_id, selected, slice_))
    view_blocks.draw(view.judges(cached.query, run, graph, key=f"judges-{abs(hash(run_id))}"))


if state.run:
    found = cached.query("explorer_run", {"run": state.run, "labels": labels_of(slice_)})
    if found.empty:
        view_state.report([view.no_run(state.run) + " Choose one in the run list above."])
    else:
        run_view(found.iloc[0].to_dict())

st.subheader("Link to this view")
st.caption("Copy it with the button at its right; opened fresh, it shows exactly this view.")
st.code(links.link(slice_, state, base=links.page_base(st.context.url)), language=None, wrap_lines=True)
export_button.draw(EXPLORER)
