"""Any covered view of the app as one self-contained offline HTML file.

``export_view(query, root, link)`` reads the app's own link with the page's declared view state
(``link.parse_link``), computes what the page shows through ``query`` with the page's own view
function (``PageState.view``: the blocks the app draws too), and returns one HTML document: the title, the slice
and the page's choices, every table (sortable, its CSV embedded), every chart (plotly.js
inlined once), the trace graph (vis-network inlined once, the Explorer's own page), the
published values beside the recomputed ones, the "simulated" marks, the store version, the
link and the time it was made. It asks for nothing outside itself.

Pages not covered yet say so in one sentence (``ExportError``).
"""
from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from ..analyses.labels_in_use import caption_for as label_caption
from ..store import read_manifest
from ..view_state.state_fields import describe_slice
from ..views.app_link import ExportError, Link, Query, check_slice, parse_link
from .document import Document

# Pages whose view function is not declared yet: page path -> the module of
# ``auditatlas.export.views`` whose ``build`` writes the view into a document. By name, imported
# when a view is exported (the builders import what their pages compute).
BUILDERS: dict[str, str] = {
    "/tour": "tour",
}


def builder(path: str) -> Callable[..., None]:
    """The ``build`` function of the page at ``path`` (one of ``BUILDERS``)."""
    return importlib.import_module(f"{__name__}.views.{BUILDERS[path]}").build


# Builders that also read the store folder itself (the search index, the step vectors beside
# the tables, the boards kept per version; a tour, whose stops may be any): given its root.
READS_FOLDER: frozenset[str] = frozenset({"/tour"})


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


def covered(page) -> bool:
    """Whether the export writes ``page`` (its declared view function, or a builder not yet converted)."""
    return bool(page.view) or page.path in BUILDERS


def not_covered(link: Link) -> str | None:
    """Why the export cannot write this view (one sentence), or None when it can."""
    page = link.page
    if not covered(page):
        from ..views.pages import PAGES

        return (f"The {page.title} page ({page.path}) is not covered by export yet; "
                f"exportable pages: {', '.join(p.path for p in PAGES if covered(p))}.")
    if page.path == "/search" and not str(link.values["q"]).strip():
        return "The link searches for nothing (it has no q=...); export the Search page with a query."
    if page.path == "/tour" and not str(link.values["name"]).strip():
        return "The link names no tour (it has no name=...); save the draft under a name, then export /tour?name=NAME."
    return None


def export_view(query: Query, root: str | Path, given: str, made_at: datetime | None = None,
                strict: bool = False, inline_warnings: bool = True) -> Export:
    """The view ``given`` (an app link) as one HTML file; raises ``ExportError`` (one sentence)
    for a page the export does not cover or a link it cannot open. ``strict`` (the CLI): a value
    the page cannot use is an error too, instead of a warning in the file beside the fallback.
    ``inline_warnings`` False: the warnings are only in ``Export.warnings`` (for a page that
    shows them itself), not in the file."""
    link = parse_link(given)
    if strict and link.problems:
        raise ExportError(" ".join(link.problems))
    doc = Document(inline_warnings=inline_warnings)
    write_view(doc, query, root, link)
    made = (made_at or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M:%S UTC")
    title = f"Audit Atlas · {link.page.title}" + (f": {link.values['name']}" if link.page.path == "/tour" else "")
    facts = [("view", link.page.what), ("slice", describe_slice(link.slice)),
             ("labels", label_caption(query, link.slice)), ("choices", choices(link)), ("store version", store_version(root)),
             ("link", link.app_link), ("link as given", link.given), ("made", made)]
    return Export(doc.render(title, [f for f in facts if f[1]]), title, link, tuple(doc.warnings))


def write_view(doc: Document, query: Query, root: str | Path, link: Link) -> None:
    """The view ``link`` opens, written into ``doc``: the link's problems, the "simulated" mark,
    then the page's own sections. Raises ``ExportError`` (one sentence) for a page the export
    does not cover. One view's file is one call; a tour's file is one call per stop, into one
    document, so its libraries are inlined once for every stop."""
    reason = not_covered(link)
    if reason:
        raise ExportError(reason)
    check_slice(link, query)
    for problem in link.problems:
        doc.warning(problem)
    simulated_mark(doc, query, link)
    if link.page.view:
        from queries.kept import remember  # the export reads what the store keeps per version, as the app

        doc.draw(link.page.view_function()(query, link, Path(root), partial(remember, root)))
        return
    build = builder(link.page.path)
    build(doc, query, link, root=Path(root)) if link.page.path in READS_FOLDER else build(doc, query, link)


def choices(link: Link) -> str:
    """The page's own values the link sets (the defaults left out), as the link writes them."""
    defaults = link.page.defaults()
    parts = [f"{name}={value}" for name, value in link.values.items()
             if value not in (None, "", []) and value != defaults.get(name)]
    return "; ".join(parts) or "the page's defaults"


def simulated_mark(doc: Document, query: Query, link: Link) -> None:
    """The "simulated" mark the pages show: which corpora of the view are generated, not released."""
    known = query("corpora")
    names = set(known.loc[known["kind"] == "simulated", "corpus"])
    if link.slice.get("corpus"):
        names &= set(link.slice["corpus"])
    if names:
        doc.text(f"Simulated data: {', '.join(sorted(names))} is generated by Audit Atlas's simulator (MAADBench "
                 "format). It is not a released corpus: its numbers illustrate the tool and are not to be cited.",
                 "simulated")


__all__ = ["BUILDERS", "Export", "covered", "ExportError", "not_covered", "export_view", "parse_link", "store_version",
           "write_view"]
