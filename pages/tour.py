"""Tour: a saved tour one stop at a time (the sentence above the view), the draft, every tour.

The URL holds the tour's name and the open stop. The content is ``auditatlas.views.tour_view``'s:
a stop's view is its own page's view function for the stop's link, drawn here as its page draws
it (without its widgets: the pages are scripts that read and rewrite the URL they run under, so
one cannot run inside this page without rewriting the tour's own link). "Open this view" opens
the page itself on the stop's link. This file holds next / previous, the draft's editor and the
buttons.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.views import not_held, tours
from auditatlas.views import tour_view as view
from auditatlas.views.pages import TOUR
from components import cached, export_button, tour_draft, view_blocks, view_state
from components.safe import md

values = dict(view_state.read(TOUR, bound=False).values)


def _go(**changes) -> None:
    values.update(changes)
    view_state.write(TOUR, values)


def present(tour: tours.Tour) -> None:
    """The open stop: where it is in the tour, next / previous, the sentence, the view."""
    n = len(tour.stops)
    index = int(values["stop"])
    if index > n:
        view_state.report([not_held("stop", index, f"this tour has {n}; opening the first stop")])
        index = 1
    stop = tour.stops[index - 1]
    st.subheader(md(tour.name))
    view_blocks.draw(view.saved_line(tour))
    back, where, onward = st.columns([1, 3, 1], vertical_alignment="center")
    back.button("← Previous", key="tour_previous", disabled=index == 1, on_click=_go, kwargs={"stop": index - 1},
                width="stretch")
    where.progress(index / n, text=view_blocks.markdown(view.where(tour, index)))
    onward.button("Next →", key="tour_next", disabled=index == n, on_click=_go, kwargs={"stop": index + 1},
                  width="stretch")
    with st.container(border=True):
        view_blocks.draw(view.sentence(stop))
    left, right = st.columns([1, 1])
    try:  # only a link to a page of this app (a row written by hand could hold anything)
        left.link_button("Open this view in its page", tours.relative_link(stop.link), width="stretch")
    except tours.BadTour as exc:
        left.warning(md(str(exc)))
    right.button("Edit this tour (into the draft)", key="tour_edit", on_click=tour_draft.load, args=(tour,),
                 width="stretch")
    with st.spinner(f"Drawing stop {index}…"):
        blocks = cached.tour_stop(stop.link, index)
    with st.container(border=True):
        view_blocks.draw(blocks)


st.title(TOUR.title)
export_button.draw(TOUR)
view_blocks.draw(view.intro())
name = str(values["name"])
if name:
    tour = tours.read(cached.query, name)
    if tour is None:
        view_state.report([not_held("tour", name, "showing the draft and the saved tours instead")])
    else:
        present(tour)
with st.expander(f"Draft ({len(tour_draft.draft().stops)} stops)", expanded=not name):
    # A tour just saved opens: its link is the page's from then on.
    tour_draft.editor(on_saved=lambda saved: _go(name=saved, stop=1))
st.subheader("Saved tours")
view_blocks.draw(view.saved(cached.query, lambda name: TOUR.url(None, {"name": name})))
