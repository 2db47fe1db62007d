"""Any view of the app as one self-contained offline HTML file.

``export_view(query, root, link)`` reads the app's own link with the page's declared view state
(``link.parse_link``), computes what the page shows through ``query`` with the page's own view
function (``PageState.view``: the blocks the app draws too), and returns one HTML document: the title, the slice
and the page's choices, every table (sortable, its CSV embedded), every chart (plotly.js
inlined once), the trace graph (vis-network inlined once, the Explorer's own page), the
published values beside the recomputed ones, the "simulated" marks, the store version, the
link and the time it was made. It asks for nothing outside itself.

A view that cannot be shown on its own (a search for nothing, a tour with no name) is one
sentence (``ExportError``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from ..analyses.labels_in_use import caption_for as label_caption
from ..store import read_manifest
from ..view_state.state_fields import describe_slice
from ..views.app_link import ExportError, Link, Query, parse_link
from ..views.page_frame import choices, not_shown, stop_blocks
from .document import Document


@dataclass(frozen=True)
class Export:
    html: str
    title: str
    link: Link
    warnings: tuple[str, ...] = ()  # every warning the file shows (the link's problems, values not held)

    @property
    def problems(self) -> list[str]:
        return self.link.problems


def store_version(root: str | Path) -> str:
    """The store version the file was made from: the manifest's digest and its sources."""
    manifest = read_manifest(root)
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:12]
    sources = ", ".join(f"{name} ({Path(str(entry.get('dir', ''))).name})"
                        for name, entry in sorted(manifest["sources"].items()))
    return f"manifest {digest}, format {manifest.get('format')}; sources: {sources or 'none'}"


def app_address(given: str | None) -> str | None:
    """The served app's address as the file's links use it (``http://host:8501[/base]``, no
    trailing slash), or None; raises ``ExportError`` for one that is not an http(s) address."""
    if not given:
        return None
    parts = urlsplit(given.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ExportError(f"The app's address '{given}' is not an http(s) address such as http://localhost:8501.")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def links_fact(app_url: str | None) -> str:
    if app_url:
        return f"into the app at {app_url}"
    return ("they need the app: this file was made without the app's address (auditatlas export --app-url "
            "ADDRESS, or the app's own Export button), so each names the page to open instead")


def export_view(query: Query, root: str | Path, given: str, made_at: datetime | None = None,
                strict: bool = False, app_url: str | None = None) -> Export:
    """The view ``given`` (an app link) as one HTML file; raises ``ExportError`` (one sentence)
    for a view that cannot be shown on its own or a link it cannot open. ``strict`` (the CLI): a value
    the page cannot use is an error too, instead of a warning in the file beside the fallback.
    ``app_url``: the served app's address, where the file's links into the app lead."""
    address = app_address(app_url)
    link = parse_link(given)
    if strict and link.problems:
        raise ExportError(" ".join(link.problems))
    doc = Document(app_url=address)
    write_view(doc, query, root, link)
    made = (made_at or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M:%S UTC")
    title = f"Audit Atlas · {link.page.title}" + (f": {link.values['name']}" if link.page.path == "/tour" else "")
    facts = [("view", link.page.what), ("slice", describe_slice(link.slice)),
             ("labels", label_caption(query, link.slice)), ("choices", choices(link)), ("store version", store_version(root)),
             ("link", link.app_link), ("links", links_fact(address)), ("link as given", link.given), ("made", made)]
    return Export(doc.render(title, [f for f in facts if f[1]]), title, link, tuple(doc.warnings))


def write_view(doc: Document, query: Query, root: str | Path, link: Link) -> None:
    """The view ``link`` opens, written into ``doc``: the link's problems, the "simulated" mark,
    then the page's own view (``views.page_frame.stop_blocks``). Raises ``ExportError`` (one
    sentence) for a view that cannot be shown on its own."""
    from queries.kept import remember  # the export reads what the store keeps per version, as the app

    doc.draw(stop_blocks(query, root, link, partial(remember, root)))


__all__ = ["Export", "ExportError", "app_address", "choices", "export_view", "not_shown", "parse_link", "store_version", "write_view"]
