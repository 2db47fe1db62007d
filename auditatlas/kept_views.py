"""What a write keeps for its store version before it returns, so that no reader's first open
pays for it: every board's default view, the whole store's supervised half of label doubt and
the doubt order it leads, the step vectors with the whole store's failure clusters, the
Detectors grid's default view, the Re-score page's sets, the Overview's counts and the
Explorer's actions. The CLI after a write and the app's first launch both call
:func:`keep_for_version`; ``AUDITATLAS_KEEP_BOARDS=0`` leaves all of it to the first open
(``board_kept.keeps_after_write``).

The query function and the two ``remember`` functions are handed in (``queries.kept``'s
``remembering_runner`` and ``remember`` functions, bound to the store): the core never imports
the query layer.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .analyses import Query, board_kept, detector_comparison, label_doubt, review_queue
from .views import explorer_view, overview_view, rescore_view

# what failed, the exception, what happens instead
Failed = Callable[[str, Exception, str], None]
BOARD = "board "  # a part "board NAME" keeps that board alone


def parts() -> list[str]:
    """The parts :func:`keep_for_version` keeps, in order (``only`` names one): each board, label
    doubt's supervised half, the doubt order it leads, the step vectors with the clusters, the
    Detectors grid, the re-scored sets, the Overview and the Explorer's actions."""
    return [name for name, _, _, _ in _kept(Path(), None, None, None)]  # nothing is computed


def _kept(root: str | Path, query: Query, remember: board_kept.Remember,
          remember_frame: label_doubt.RememberFrame) -> list[tuple[str, str, Callable[[], Any], str]]:
    """Each part as (its name, what failed, how it is kept, what happens instead), declared once
    for :func:`parts` and :func:`keep_for_version`."""
    def clusters_kept() -> None:
        from .patterns import clusters  # here: patterns import the analyses this module imports

        clusters.keep_default(root, query)

    # A table kept already is found, not read (the half is 9 million rows at a million rooms,
    # 2.3 GB as a frame): ``as_file`` hands back its path.
    def as_path(*args: Any, **kwargs: Any) -> Any:
        return remember_frame(*args, **{"as_file": True, **kwargs})  # a caller may still ask for rows

    kept: list[tuple[str, str, Callable[[], Any], str]] = [
        (BOARD + name, f"the {name} board could not be scored now",
         lambda name=name: board_kept.keep_all(query, remember, name), "the Boards page scores it on first open")
        for name in board_kept.registry()]
    return kept + [
        ("label doubt", "the supervised half of label doubt could not be fitted now",
         lambda: label_doubt.kept_supervised_doubt(query, root, {}, as_path),
         "the Review page fits it on first open"),
        # A part of its own: after the fit in one process, the two peaks added up (2.4 GB at a
        # million rooms against 1.8 and 1.5 apart).
        ("the doubt order", "the Review page's doubt order could not be computed now",
         lambda: review_queue.kept_doubt_order(query, root, {}, as_path),
         "the Review page computes it on first open"),
        ("step vectors and failure clusters", "the step vectors could not be built now",
         clusters_kept, "the Patterns page builds them on first open"),
        ("the Detectors grid", "the Detectors grid's default view could not be computed now",
         lambda: detector_comparison.keep_default_grid(query), "the Detectors page computes it on first open"),
        ("the re-scored sets", "the Re-score page's sets and their test ROC-AUCs could not be computed now",
         lambda: rescore_view.keep_default_sets(query), "the Re-score page computes them on first open"),
        ("the Overview", "the Overview's counts and rates could not be computed now",
         lambda: overview_view.keep_default(query), "the Overview computes them on first open"),
        ("the Explorer's actions", "the Explorer's list of actions could not be computed now",
         lambda: explorer_view.keep_default(query), "the Explorer computes it on first open"),
    ]


def keep_for_version(root: str | Path, query: Query, remember: board_kept.Remember,
                     remember_frame: label_doubt.RememberFrame, failed: Failed | None = None,
                     say: Callable[[str], None] | None = None, only: str | None = None) -> None:
    """Keep each view for the store's current version. A part that fails is told to ``failed``
    (the write has landed: a note, not a failure) and the next part is kept all the same;
    without ``failed`` the first failure is raised. With ``say``, each part's time and memory
    peak are told as it ends (``phases.phase``). ``only``: that part of :func:`parts` alone."""
    from contextlib import nullcontext

    from .phases import phase

    kept = _kept(root, query, remember, remember_frame)
    for name, what, keep, instead in kept:
        if only is not None and name != only:
            continue
        try:
            with phase(name, say) if say is not None else nullcontext():
                keep()
        except Exception as exc:  # noqa: BLE001 - told to the caller, who decides
            if failed is None:
                raise
            failed(what, exc, instead)
