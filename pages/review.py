"""Review: the slice's steps in a chosen order, one at a time, a verdict on each (stored at once).

The URL holds the queue, its seed, the position and the reviewer's name: a link reopens the
same step of the same queue. Giving a verdict writes it to the store (auditatlas.verdicts) and
opens the next step.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas import run_labels, verdicts
from auditatlas.analyses import review_queue
from auditatlas.errors import AtlasError
from auditatlas.views import explorer_url, explorer_view
from auditatlas.views import review_view as view
from auditatlas.views.pages import REVIEW
from components import cached, export_button, review_item, view_blocks, view_state
from components.safe import md

CONTEXT_STEPS = 5  # steps before the reviewed one shown as its run context
CONTEXT_CHARS = 160  # characters of each context step's output
# One key per verdict (Streamlit ignores them while a text field has the focus; C and R are its own).
KEYS = {"anomaly": "A", "normal": "N", "unsure": "U"}

slice_ = st.session_state.get("slice", {})
# No widget is bound to the URL: the callbacks below write it, so it is the one truth.
values = dict(view_state.read(REVIEW, bound=False).values)


def _go(**changes) -> None:
    values.update(changes)
    view_state.write(REVIEW, values)


def _from_widget(key: str, name: str, **also) -> None:
    _go(**{name: st.session_state[key]}, **also)


st.title(REVIEW.title)
export_button.draw(REVIEW)

orders = list(review_queue.ORDERS)
left, middle, right = st.columns([2, 1, 2])
left.selectbox("Order", orders, index=orders.index(values["queue"]), key="review_queue",
               format_func=lambda name: review_queue.ORDERS[name].title,
               on_change=_from_widget, args=("review_queue", "queue"), kwargs={"position": 0})
order = review_queue.ORDERS[values["queue"]]
if order.seeded:
    middle.number_input("Seed", min_value=0, value=int(values["seed"]), step=1, key="review_seed",
                        on_change=_from_widget, args=("review_seed", "seed"), kwargs={"position": 0})
right.text_input("Reviewer", value=values["reviewer"], key="review_reviewer", placeholder="your name",
                 on_change=_from_widget, args=("review_reviewer", "reviewer"))
# What the page and the order are, folded: the step and the verdict come first.
with st.expander(f"About this page and the {order.title.lower()} order"):
    view_blocks.draw(view.intro(slice_))
    st.markdown(md(order.explains))


def _next_step_now() -> None:
    """Run the review panel again at once (not the sidebar and the rest of the app). A full run
    of the script (the first one, AppTest's) cannot rerun a fragment alone: then the whole page."""
    from streamlit.errors import StreamlitInvalidLayoutContextError

    try:
        st.rerun(scope="fragment")
    except StreamlitInvalidLayoutContextError:
        st.rerun()


def queue_view() -> None:
    """The open step of the queue, its verdict form and its context (or why there is none)."""
    # The queue (cached.review_queue) and everything but the verdicts (query_unreviewed) are kept
    # while only verdicts are written: a verdict does not make the queue or the step be read again.
    queue = None
    if order.name == "doubt":
        try:
            with st.spinner("Fitting the supervised half of label doubt (out-of-fold, once per store version)…"):
                queue, notes = cached.review_queue(order.name, slice_, int(values["seed"]), supervised=True)
        except AtlasError as exc:  # e.g. the store changed while its features were read
            st.warning(md(f"The supervised half of label doubt could not be computed ({exc}); the order below rests "
                          "on the label-free half alone."))
        else:
            for note in notes:  # our words and corpus names: as text
                st.caption(md(note))
    if queue is None:
        queue, _ = cached.review_queue(order.name, slice_, int(values["seed"]), supervised=False)
    if queue.empty:
        st.warning(review_queue.why_empty(cached.query_unreviewed, order.name, slice_))  # our words only
        return
    position = int(values["position"])
    if position >= len(queue):
        st.success(f"End of the queue: all {len(queue):,} step(s) of this order have been shown.")
        st.button("Back to the first step", on_click=_go, kwargs={"position": 0}, key="review_restart")
        return

    item = queue.iloc[position]
    run_id, step_idx = str(item["run_id"]), int(item["step_idx"])
    step_rows = cached.query_unreviewed("explorer_step", {"run": run_id, "step": step_idx})
    run_rows = cached.query_unreviewed("explorer_run", {"run": run_id})
    step, run = step_rows.iloc[0].to_dict(), run_rows.iloc[0].to_dict()

    # The step to judge and the verdict side by side, on the first screen: read, then decide.
    reading, deciding = st.columns([3, 2], gap="medium")
    with reading:
        st.subheader(f"Step {position + 1:,} of {len(queue):,}")
        st.markdown(f"Run **{md(run_labels.row_label(run))}**, step **{step_idx}** · "
                    f"{md(step.get('action') or '—')} · agent {md(step.get('agent') or '—')}")
        st.caption(f"run id {md(run_id)}")
        review_item.label_line(step, run)
        review_item.texts(step)
    with deciding:
        with st.form("review_verdict", clear_on_submit=True, border=True):
            st.markdown("**Your verdict**")
            buttons = st.columns(3)
            given = [v for v, column in zip(verdicts.VERDICTS, buttons)
                     if column.form_submit_button(v.capitalize(), key=f"review_{v}", width="stretch",
                                                  shortcut=KEYS[v])]
            failure_mode = st.text_input("Failure mode (optional)", key="review_failure_mode")
            note = st.text_area("Note (optional)", key="review_note", height=68)
            st.caption("Keys (outside a text field): A anomaly, N normal, U unsure; ← previous, → skip.")
        # Two buttons a row, each label whole with its key (in three columns "Previous" was cut).
        nav = st.columns(2)
        nav[0].button("Previous", disabled=position == 0, on_click=_go, kwargs={"position": position - 1},
                      key="review_prev", shortcut="Left", width="stretch")
        nav[1].button("Skip", on_click=_go, kwargs={"position": position + 1}, key="review_skip", shortcut="Right",
                      width="stretch")
        st.link_button("Open in the Explorer", explorer_url(run_id, step_idx, slice=slice_), width="stretch")
        review_item.signal(item, order.name)
        review_item.history(cached.query("step_verdicts", {"run": run_id, "step": step_idx}))
    if given:
        # The field's own value: the freshest, even when its change has not reached the URL yet.
        reviewer = str(st.session_state.get("review_reviewer", values["reviewer"]) or "").strip()
        if not reviewer:
            st.warning("Give your name under Reviewer first: every verdict carries its reviewer.")
        else:
            row = verdicts.verdict(str(item["corpus"]), run_id, step_idx, given[0], reviewer, failure_mode=failure_mode,
                                  note=note, queue=order.name, seed=int(values["seed"]) if order.seeded else None)
            try:
                verdicts.append_verdicts(cached.store_root(), [row])
            except AtlasError as exc:
                st.error(md(str(exc)))
            else:
                _go(position=position + 1)
                _next_step_now()

    st.markdown("**Run context**")
    review_item.context(cached.query_unreviewed("review_context", {"run": run_id, "step": step_idx, "before": CONTEXT_STEPS,
                                                        "chars": CONTEXT_CHARS}), step_idx)
    view_blocks.draw(explorer_view.step_detail(
        step, cached.query_unreviewed("explorer_step_scores", {"run": run_id, "step": step_idx}), key="review-step"))


@st.fragment
def review_panel() -> None:
    """The open step, its verdict form and the agreement figures: a verdict (or Previous, Skip)
    reruns this panel alone, not the sidebar and the rest of the app, so the next step opens at
    once and the figures take the verdict in."""
    queue_view()
    # Below the queue, whatever it shows: the figures read every verdict (cached per store
    # version, so a verdict given makes them be computed again, and nothing else). The error
    # rate rests on the chosen seed's sample alone (review_agreement: never pooled across seeds).
    view_blocks.draw(view.agreement(cached.query, slice_, int(values["seed"])))


review_panel()
