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


def warm(root: Path, say: Say, lead: str = WRITTEN) -> None:
    """Build what a reader would otherwise wait for, for the store's current version; each
    sentence about a part that could not be built starts with ``lead``."""
    from .phases import phase

    with phase("derived tables", say):
        derive(root, say, lead)
    with phase("search index", say):
        index(root, say, lead)  # its own read of the steps: built even when the derived tables could not be
    keep(root, say, lead)


def keep(root: str | Path, say: Say, lead: str = WRITTEN) -> None:
    """The kept views for the store's version (about 9 s of board scoring on the default store,
    50 s at a million rooms; the doubt's fit and the vectors about 30 s each at 100,000 rooms).
    ``AUDITATLAS_KEEP_BOARDS=0`` leaves them to the first open."""
    from functools import partial

    from queries.kept import remember, remember_frame, remembering_runner

    from .analyses.board_kept import keeps_after_write
    from .kept_views import keep_for_version

    if not keeps_after_write():
        return
    keep_for_version(root, remembering_runner(root), partial(remember, root), partial(remember_frame, root),
                     failed=lambda what, exc, instead: say(f"{lead}{what} ({first_line(exc)}); {instead}."),
                     say=say)


def derive(root: Path, say: Say, lead: str = WRITTEN) -> None:
    """The Detectors page's derived tables (``queries.warm``)."""
    import queries

    try:
        built = queries.warm(root)
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
