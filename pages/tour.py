"""Tour: a saved tour one stop at a time (the sentence above the view), the draft, every tour.

The URL holds the tour's name and the open stop. A stop's view is drawn by its page's export
builder for the stop's link (``auditatlas.export``: the same analyses and figures as the page),
in a frame: the pages themselves are scripts that read and rewrite the URL they run under, so
one cannot run inside this page without rewriting the tour's own link. "Open this view" opens
the page itself on the stop's link.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas import tours
from auditatlas.export import ExportError
from auditatlas.views import not_held
from auditatlas.views.pages import TOUR
from components import cached, export_button, tour_draft, view_state
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
    st.caption(f"Saved {md(tour.saved_at)}" + (f" by {md(tour.author)}" if tour.author else "")
               + f" · {n} stop(s)")
    back, where, onward = st.columns([1, 3, 1], vertical_alignment="center")
    back.button("← Previous", key="tour_previous", disabled=index == 1, on_click=_go, kwargs={"stop": index - 1},
                width="stretch")
    where.progress(index / n, text=f"Stop {index} of {n} · {md(tours.page_title(stop))}")
    onward.button("Next →", key="tour_next", disabled=index == n, on_click=_go, kwargs={"stop": index + 1},
                  width="stretch")
    with st.container(border=True):
        st.markdown("#### " + md(stop.sentence))
    left, right = st.columns([1, 1])
    try:  # only a link to a page of this app (a row written by hand could hold anything)
        left.link_button("Open this view in its page", tours.relative_link(stop.link), width="stretch")
    except tours.BadTour as exc:
        left.warning(md(str(exc)))
    right.button("Edit this tour (into the draft)", key="tour_edit", on_click=tour_draft.load, args=(tour,),
                 width="stretch")
    try:
        with st.spinner(f"Drawing stop {index}…"):
            shown = export_button.stop_view(stop.link, str(cached.store_root()), cached.store_stamp())
    except ExportError as exc:
        st.warning(md(f"Stop {index} cannot be drawn here: {exc} Open it in its page instead."))
        return
    view_state.report(shown.warnings)  # values the store lacks: the page's own sentences, here only
    st.iframe(shown.html, height="content", alt=f"stop {index} of the tour")


def saved_tours() -> None:
    listing = tours.listing(cached.query)
    if listing.empty:
        st.caption("The store holds no tour yet.")
        return
    listing = listing.assign(open=[TOUR.url(None, {"name": name}) for name in listing["name"]])
    st.dataframe(listing[["name", "stops", "saved_at", "author", "versions", "open"]], hide_index=True,
                 width="stretch", key="tour_list",
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open")})


st.title("Tour")
export_button.draw(TOUR)
st.caption("A tour is a list of views, each with a sentence saying what to see there, saved in the store under a "
           "name. Its stops are links, so it opens on any store that holds the same data; a stop whose values "
           "this store lacks says so. Each stop carries its own slice: the sidebar's does not apply here.")
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
saved_tours()
