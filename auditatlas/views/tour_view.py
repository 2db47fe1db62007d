"""The Tour page's content: what a tour is, a saved tour's stops (the author's sentence above each
stop's view, computed by its own page's view function) and the list of saved tours.

The app shows one stop at a time, with next / previous, the draft's editor and the list between
the sections; ``page`` (the export) writes every stop of the link's tour in order into one file,
so its libraries are inlined once for every stop and it reads on paper or offline as a
companion to a text. A stop the store cannot show (a value it does not hold, a link written by
hand) keeps its place and its sentence, with the reason in one sentence.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..analyses.board_kept import Remember
from ..view_state.state_fields import describe_slice
from . import blocks as b
from . import tours
from .app_link import ExportError, parse_link
from .page_frame import choices, stop_blocks

Query = Callable[..., pd.DataFrame]


def intro() -> list[b.Block]:
    return [b.note("A tour is a list of views, each with a sentence saying what to see there, saved in the store under a "
                   "name. Its stops are links, so it opens on any store that holds the same data; a stop whose values "
                   "this store lacks says so. Each stop carries its own slice: the sidebar's does not apply here.")]


def no_tour(name: str) -> str:
    return f"The store holds no tour named '{name}'; `auditatlas tours` lists the tours it holds."


def saved_line(tour: tours.Tour) -> list[b.Block]:
    """When and by whom the tour was saved, and its length."""
    by = " by {}" if tour.author else ""
    return [b.note("Saved {}" + by + " · {} stop(s)", str(tour.saved_at), *([str(tour.author)] if tour.author else []),
                   len(tour.stops))]


def where(tour: tours.Tour, i: int) -> b.Text:
    """Stop ``i`` (1-based) of the tour, and the page it opens."""
    return b.Text("Stop {} of {} · {}", (i, len(tour.stops), tours.page_title(tour.stops[i - 1])))


def sentence(stop: tours.Stop) -> list[b.Block]:
    return [b.Text.plain(stop.sentence, "sentence")]


def stop_view(query: Query, root: str | Path, stop: tours.Stop, i: int,
              remember: Remember | None = None) -> list[b.Block]:
    """Stop ``i``'s link, slice and choices, then its view as its page shows it for that link
    (the link's problems first); the reason in one sentence when it cannot be shown here."""
    try:
        link = parse_link(stop.link)
    except ExportError as exc:
        return [b.warning("Stop {} cannot be shown here: {}", i, str(exc))]
    out: list[b.Block] = [b.Facts((("link", stop.link), ("slice", describe_slice(link.slice)),
                                   ("choices", choices(link))))]
    try:
        return out + stop_blocks(query, root, link, remember)
    except ExportError as exc:
        return out + [b.warning("Stop {} cannot be shown here: {}", i, str(exc))]


def saved(query: Query, url: Callable[[str], str]) -> list[b.Block]:
    """Every saved tour with a link opening it (``url`` of a tour's name)."""
    listing = tours.listing(query)
    if listing.empty:
        return [b.note("The store holds no tour yet.")]
    listing = listing.assign(open=[url(name) for name in listing["name"]])
    return [b.Table(listing[["name", "stops", "saved_at", "author", "versions", "open"]], "tour_list",
                    columns=(b.Column("open", link_text="open"),))]


def anchor(i: int) -> str:
    return f"stop-{i}"


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """Every stop of the link's tour in order, each with its sentence above its view."""
    name = str(link.values["name"])
    tour = tours.read(query, name)
    if tour is None:
        raise ExportError(no_tour(name))
    n = len(tour.stops)
    by = " by {}" if tour.author else ""
    out: list[b.Block] = [b.note(
        "A tour of {} stop(s), saved {}" + by + " (version {}). Each stop is one view of the app: the author's "
        "sentence, then the view as its page shows it for that link.",
        n, str(tour.saved_at), *([str(tour.author)] if tour.author else []), str(tour.version_id))]
    out += [b.Heading("Stops", 2, anchor="stops"),
            b.Jumps(tuple((anchor(i), f"{i}. {tours.page_title(stop)}") for i, stop in enumerate(tour.stops, 1)))]
    for i, stop in enumerate(tour.stops, start=1):
        out += [b.Heading(where(tour, i), 2, anchor=anchor(i)), *sentence(stop),
                *stop_view(query, root, stop, i, remember),
                b.Jumps(tuple([(anchor(j), label) for j, label in ((i - 1, "previous stop"), (i + 1, "next stop"))
                               if 1 <= j <= n] + [("stops", "all stops")]))]
    return out
