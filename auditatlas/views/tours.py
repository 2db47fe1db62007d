"""Guided tours: named lists of views, each with the author's sentence, kept in the store.

A tour is a name and its stops; a stop is a view's link (the app's own relative link,
``/boards?tab=POST``) and one sentence of explanation. Links, not store ids: the same tour
opens on any store that holds the same data, and a stop whose values a store lacks is
reported there the way its page reports a link's value it does not hold.

Where they live: the store source ``tours``, table ``tours``, written exactly as the reviewers'
verdicts are (``auditatlas/verdicts.py``): a save takes the store lock, carries the parts the
source holds (hard links), adds one part with the new version's rows and switches the source
in with the manifest. So a reader sees a whole version or none, a failed save leaves the store
as it was, and two authors saving at once each carry the other's tours (the lock orders them).

History kept: a save appends a version (one row per stop, all sharing its ``version_id``); the
latest version of a name counts (``queries/sql/tour_stops.sql``), and removing a tour appends a
version of one row with no stop. Why keep them: it costs a few rows, an append never rewrites a
committed part, and a tour cited while its author went on editing can be followed back
(``auditatlas tours show NAME --json`` names the version shown; ``tour_versions.sql`` lists all).

No Streamlit here; the app's draft is a :class:`Tour` held in the session until it is saved.
"""
from __future__ import annotations

import base64
import binascii
import json
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

from ..errors import AtlasError
from ..schema import TABLES
from ..store import TOURS_SOURCE
from ..store_appends import appending
from .app_link import ExportError, page_of

TOUR_PATH = "/tour"
NAME_LIMIT = 200  # characters of a tour's name
SENTENCE_LIMIT = 2_000  # characters of a stop's sentence (a sentence, not a document)
STOP_LIMIT = 100  # stops of one tour (the export holds every one of them)


class BadTour(AtlasError):
    """A tour that cannot be saved (one sentence per problem); nothing was written."""


@dataclass(frozen=True)
class Stop:
    link: str  # the view's relative link (path and query)
    sentence: str  # the author's explanation


@dataclass(frozen=True)
class Tour:
    name: str
    stops: tuple[Stop, ...] = ()
    # Set when read from the store: which saved version this is, when and by whom.
    version_id: str | None = None
    saved_at: str | None = None
    author: str | None = None

    # ------------------------------------------------------------------ editing (a new tour each time)

    def add(self, link: str, sentence: str) -> Tour:
        """The tour with a stop at ``link`` appended (the link made relative, checked)."""
        return replace(self, stops=(*self.stops, Stop(relative_link(link), sentence.strip())))

    def move(self, index: int, offset: int) -> Tour:
        """The tour with stop ``index`` moved ``offset`` places (-1: earlier), clamped to the ends."""
        stops = list(self.stops)
        target = min(max(index + offset, 0), len(stops) - 1)
        stops.insert(target, stops.pop(index))
        return replace(self, stops=tuple(stops))

    def remove(self, index: int) -> Tour:
        return replace(self, stops=tuple(s for i, s in enumerate(self.stops) if i != index))

    def with_sentence(self, index: int, sentence: str) -> Tour:
        stops = list(self.stops)
        stops[index] = Stop(stops[index].link, sentence.strip())
        return replace(self, stops=tuple(stops))

    def renamed(self, name: str) -> Tour:
        return replace(self, name=name.strip())

    # ------------------------------------------------------------------ its portable form

    def to_json(self) -> dict[str, Any]:
        """What ``auditatlas tours show --json`` prints and ``auditatlas tours import`` reads."""
        return {"name": self.name, "version_id": self.version_id, "saved_at": self.saved_at, "author": self.author,
                "stops": [{"link": s.link, "sentence": s.sentence} for s in self.stops]}

    @staticmethod
    def from_json(data: Any, where: str = "the tour") -> Tour:
        """A tour from ``to_json``'s form; BadTour naming the field when it is not one."""
        if not isinstance(data, Mapping):
            raise BadTour(f"{where} is not a JSON object with 'name' and 'stops'.")
        stops = data.get("stops")
        if not isinstance(data.get("name"), str) or not isinstance(stops, list):
            raise BadTour(f"{where}: field 'name' (text) and field 'stops' (a list) are both needed.")
        read = []
        for i, stop in enumerate(stops, start=1):
            if not isinstance(stop, Mapping) or not isinstance(stop.get("link"), str) \
                    or not isinstance(stop.get("sentence"), str):
                raise BadTour(f"{where}: stop {i} needs a 'link' and a 'sentence', both text.")
            try:
                link = relative_link(stop["link"])
            except BadTour as exc:
                raise BadTour(f"{where}: stop {i}'s link: {exc}") from None
            read.append(Stop(link, stop["sentence"].strip()))
        author = data.get("author")
        return Tour(data["name"].strip(), tuple(read), author=author.strip() or None if isinstance(author, str) else None)


def relative_link(given: str) -> str:
    """``given`` (``http://host:8501/boards?tab=POST`` or ``/boards?...``) as the path and query
    alone, so the stop opens on any server; BadTour when it names no page of the app or a tour."""
    parts = urlsplit(given.strip())
    path = parts.path or "/"
    try:
        page = page_of(path)
    except ExportError as exc:
        raise BadTour(str(exc)) from None
    if page.path == TOUR_PATH:
        raise BadTour("A tour's stop is one view; a tour cannot be a stop of another tour.")
    return page.path + (f"?{parts.query}" if parts.query else "")


def page_title(stop: Stop) -> str:
    """The page a stop opens, as the navigation names it (its link's path when it names none)."""
    path = urlsplit(stop.link).path or "/"
    try:
        return page_of(path).title
    except ExportError:
        return path


def problems(tour: Tour) -> list[str]:
    """One sentence per reason ``tour`` cannot be saved (empty when it can)."""
    found = []
    if not tour.name.strip():
        found.append("A tour needs a name.")
    elif len(tour.name) > NAME_LIMIT:
        found.append(f"The tour's name is {len(tour.name):,} characters long; at most {NAME_LIMIT} are kept.")
    elif any(c in tour.name for c in "\n\r\t"):
        found.append("A tour's name is one line (no line breaks or tabs).")
    if not tour.stops:
        found.append("A tour needs at least one stop: add a view to it first.")
    if len(tour.stops) > STOP_LIMIT:
        found.append(f"The tour has {len(tour.stops)} stops; at most {STOP_LIMIT} are kept.")
    for i, stop in enumerate(tour.stops, start=1):
        if not stop.sentence.strip():
            found.append(f"Stop {i} has no sentence: say in one sentence what the reader should see there.")
        elif len(stop.sentence) > SENTENCE_LIMIT:
            found.append(f"Stop {i}'s sentence is {len(stop.sentence):,} characters long; at most {SENTENCE_LIMIT:,}.")
    return found


# ---------------------------------------------------------------------------- writing


def table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Rows as the store's ``tours`` table."""
    schema = TABLES["tours"]
    rows = list(rows)
    return pa.table({f.name: pa.array([row.get(f.name) for row in rows], type=f.type) for f in schema}, schema=schema)


def version_rows(tour: Tour, version_id: str, saved_at: str) -> list[dict[str, Any]]:
    """One row per stop; a tour with no stop (a removal) is one row without one."""
    base = {"version_id": version_id, "name": tour.name, "saved_at": saved_at, "author": tour.author or None}
    if not tour.stops:
        return [{**base, "stop_idx": None, "link": None, "sentence": None}]
    return [{**base, "stop_idx": i, "link": s.link, "sentence": s.sentence} for i, s in enumerate(tour.stops)]


def save(root: str | Path, tour: Tour, *, wait: bool = True, notify: Callable[[str], None] | None = None) -> Tour:
    """Save ``tour`` as the newest version of its name, atomically; returns it as stored (with
    its version id and time). Raises BadTour (one sentence per problem, nothing written)."""
    bad = problems(tour)
    if bad:
        raise BadTour(" ".join(bad))
    return _append(root, tour, wait=wait, notify=notify)


def remove(root: str | Path, name: str, query: Callable[..., Any], *, wait: bool = True,
           notify: Callable[[str], None] | None = None) -> bool:
    """Remove the tour ``name`` (a version without stops; the earlier ones stay in the history).
    False when the store holds no tour of that name."""
    if read(query, name) is None:
        return False
    _append(root, Tour(name), wait=wait, notify=notify)
    return True


def _append(root: str | Path, tour: Tour, *, wait: bool, notify: Callable[[str], None] | None) -> Tour:
    from ..verdicts import now_utc

    version_id, saved_at = uuid.uuid4().hex, now_utc()
    with appending(root, TOURS_SOURCE, "tours", wait=wait, notify=notify) as (writer, _held):
        writer.append({"tours": table(version_rows(tour, version_id, saved_at))})
        writer.commit({"format": "tours", "origin": "tours", "saved": tour.name})
    return replace(tour, version_id=version_id, saved_at=saved_at)



# ---------------------------------------------------------------------------- reading (through the query layer)


def read(query: Callable[..., Any], name: str) -> Tour | None:
    """The latest saved version of the tour ``name``, or None (never saved, or removed)."""
    rows = query("tour_stops", {"name": name})
    if rows.empty:
        return None
    first = rows.iloc[0]
    stops = tuple(Stop(str(r.link), str(r.sentence)) for r in rows.itertuples(index=False))
    return Tour(str(first["name"]), stops, version_id=str(first["version_id"]), saved_at=str(first["saved_at"]),
                author=None if first["author"] is None or first["author"] != first["author"] else str(first["author"]))


def listing(query: Callable[..., Any]):
    """Every tour the store holds (its latest version): name, stops, saved_at, author, versions."""
    return query("tours")


def encode_draft(tour: Tour) -> str:
    """A tour being made as URL text (the app's ``draft=``, so a reload keeps it): its JSON
    (``Tour.to_json``), compressed, base64url without padding."""
    packed = zlib.compress(json.dumps(tour.to_json(), separators=(",", ":")).encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def decode_draft(text: str) -> Tour:
    """``encode_draft``'s draft back (links checked as a saved tour's); BadTour in one sentence when the
    text is not one (a URL edited by hand, cut short)."""
    try:
        data = json.loads(zlib.decompress(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))))
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise BadTour(f"The URL's draft=... is not a tour draft ({type(exc).__name__}).") from None
    tour = Tour.from_json(data, "The URL's draft=...")
    if len(tour.stops) > STOP_LIMIT:
        raise BadTour(f"The URL's draft=... has {len(tour.stops)} stops; a tour holds at most {STOP_LIMIT}.")
    return tour
