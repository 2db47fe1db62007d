"""A saved tour as one file: every stop in order, each with its sentence above its view.

Each stop's view is written by the same builder as its page's own export (``write_view``) into
the one document, so plotly.js and vis-network are inlined once for the whole tour, and the
file reads on paper or offline as a companion to a text. A stop the store cannot show (its
page not covered by export, a run the store does not hold) keeps its place and its sentence,
with the reason in one sentence, as the tour page says it.
"""
from __future__ import annotations

from pathlib import Path

from ... import tours
from ...view_state.state_fields import describe_slice
from ...views.app_link import ExportError, Link, Query, parse_link
from ..document import Document


def build(doc: Document, query: Query, link: Link, root: Path) -> None:
    from .. import choices, write_view  # the package imports this module: read at call time

    name = str(link.values["name"])
    tour = tours.read(query, name)
    if tour is None:
        raise ExportError(f"The store holds no tour named '{name}'; `auditatlas tours` lists the tours it holds.")
    n = len(tour.stops)
    doc.text(f"A tour of {n} stop(s), saved {tour.saved_at}" + (f" by {tour.author}" if tour.author else "")
             + f" (version {tour.version_id}). Each stop is one view of the app: the author's sentence, then the "
             "view as its page shows it for that link.", "note")
    doc.heading("Stops", 2, anchor="stops")
    doc.jumps([(anchor(i), f"{i}. {tours.page_title(stop)}") for i, stop in enumerate(tour.stops, start=1)])
    for i, stop in enumerate(tour.stops, start=1):
        doc.heading(f"Stop {i} of {n} · {tours.page_title(stop)}", 2, anchor=anchor(i))
        doc.text(stop.sentence, "sentence")
        try:
            stop_link = parse_link(stop.link)
        except ExportError as exc:
            doc.warning(f"Stop {i} cannot be shown: {exc}")
            continue
        doc.facts([("link", stop.link), ("slice", describe_slice(stop_link.slice)), ("choices", choices(stop_link))])
        try:
            write_view(doc, query, root, stop_link)
        except ExportError as exc:
            doc.warning(f"Stop {i} cannot be shown here: {exc}")
        doc.jumps([(anchor(j), label) for j, label in ((i - 1, "previous stop"), (i + 1, "next stop")) if 1 <= j <= n]
                  + [("stops", "all stops")])


def anchor(i: int) -> str:
    return f"stop-{i}"
