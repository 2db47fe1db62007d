"""What follows a write that landed, built once for the store's new version so that no reader's
first open waits for it: the derived tables, the search index, and the kept views
(``kept_views.keep_for_version``: the boards' default views, label doubt's supervised half, the
step vectors and failure clusters, the Detectors grid's means).

One warm-up for every writer: the command line after each write (and ``auditatlas warm`` after an
upgrade), the app's first launch after it builds the default store. A part that cannot be built
is one sentence to ``say`` (the write has landed: a note, never a failure).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .errors import first_line

Say = Callable[[str], None]
WRITTEN = "written, but "  # how a note after a write begins


def after_write(root: Path, say: Say, warn: Say) -> None:
    """After a write: a source the write did not touch may still be unreadable; said to ``warn``,
    and the derived tables (which read every source) are left for the first query after a repair."""
    from .store import health

    problems = health(root, deep=True)
    for problem in problems:
        warn(f"{WRITTEN}the store still holds a source it cannot read: {problem}")
    if not problems:
        warm(root, say)


# From this many steps each part is built in a process of its own: what one part's libraries
# and allocators keep after it ends (DuckDB's, scikit-learn's imports) is then given back
# before the next, so the build's peak is its largest part's, not their sum. A smaller store
# builds them here: a process costs its imports, about 2 s a part.
APART_STEPS = 200_000


def warm(root: Path, say: Say, lead: str = WRITTEN, apart: bool | None = None) -> None:
    """Build what a reader would otherwise wait for, for the store's current version; each
    sentence about a part that could not be built starts with ``lead``. Each part's time and
    memory peak are told to ``say`` as it ends. ``apart``: each part in a process of its own
    (``say`` must then be a module-level function); None: from ``APART_STEPS`` steps on."""
    from .analyses.board_kept import keeps_after_write
    from .kept_views import parts as kept_parts

    parts = ["derived tables", "search index"] + (kept_parts() if keeps_after_write() else [])
    if apart is None:
        apart = _steps(root) >= APART_STEPS
    for part in parts:
        if not apart:
            build_part(root, part, say, lead)
            continue
        import multiprocessing

        child = multiprocessing.get_context("spawn").Process(target=build_part, args=(root, part, say, lead))
        child.start()
        child.join()
        if child.exitcode != 0:
            say(f"{lead}{part} could not be built now (its process ended with code {child.exitcode}); "
                "the page that shows it builds it on first open.")


def build_part(root: Path, part: str, say: Say, lead: str = WRITTEN) -> None:
    """One part of ``warm``, timed and its memory peak told (``phases.phase``)."""
    from .phases import phase

    if part == "derived tables":
        with phase(part, say):
            derive(root, say, lead)
    elif part == "search index":
        with phase(part, say):
            index(root, say, lead)  # its own read of the steps: built even when the derived tables could not be
    else:
        keep(root, say, lead, only=part)


def _steps(root: Path) -> int:
    from .store import read_manifest

    try:
        sources = read_manifest(root).get("sources", {})
    except Exception:  # noqa: BLE001 - a store that cannot be read is built here and says why
        return 0
    return sum(int(source.get("rows", {}).get("steps", 0)) for source in sources.values())


def keep(root: str | Path, say: Say, lead: str = WRITTEN, only: str | None = None) -> None:
    """The kept views for the store's version (``only``: one part of ``kept_views.parts()``).
    ``AUDITATLAS_KEEP_BOARDS=0`` leaves them to the first open."""
    from functools import partial

    from queries.kept import remember, remember_frame, remembering_runner

    from .analyses.board_kept import keeps_after_write
    from .kept_views import keep_for_version

    if not keeps_after_write():
        return
    keep_for_version(root, remembering_runner(root), partial(remember, root), partial(remember_frame, root),
                     failed=lambda what, exc, instead: say(f"{lead}{what} ({first_line(exc)}); {instead}."),
                     say=say, only=only)


def derive(root: Path, say: Say, lead: str = WRITTEN) -> None:
    """The Detectors page's derived tables, built on disk (``queries.build_derived``)."""
    import queries

    try:
        built = queries.build_derived(root)
    except Exception as exc:  # noqa: BLE001 - the write has landed: a note, not a failure
        say(f"{lead}the Detectors page's derived tables could not be built now ({first_line(exc)}); "
            "it will try again on first use.")
        return
    if not built:
        say("the Detectors page's derived tables could not be built now; it will try again on first use.")


def index(root: Path, say: Say, lead: str = WRITTEN) -> None:
    """The search index of the store's version (``queries.search.ensure_built``)."""
    from queries.search import ensure_built

    why = ensure_built(root)
    if why is not None:
        say(f"{lead}the search index could not be built now ({why}); search scans the text until a "
            "build succeeds (the Search page starts one).")
