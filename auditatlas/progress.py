"""One progress protocol for every long piece of work: a callable hearing the share done (0 to 1)
and a sentence saying what is being done.

Producers (the ingest, the demo build, detector and judge runs, the step vectors, the clusters)
call it and know nothing of who draws it; the command line draws it with tqdm
(``commands/progress_bar.py``), the app with ``st.progress`` (``components/progress_view.py``).
"""
from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[float, str], None]


def quiet(fraction: float, message: str) -> None:
    """Progress nobody asked to hear."""


def or_quiet(progress: Progress | None) -> Progress:
    """``progress`` itself, or :func:`quiet` when the caller gave none."""
    return progress if progress is not None else quiet


def share(progress: Progress | None, start: float, end: float) -> Progress:
    """A phase's own progress (0 to 1) heard as its share ``start``..``end`` of the whole work."""
    report = or_quiet(progress)
    return lambda fraction, message: report(start + (end - start) * clamp(fraction), message)


def clamp(fraction: float) -> float:
    """A share within 0..1 whatever a producer's arithmetic gave (rounding, a count that grew)."""
    return min(max(float(fraction), 0.0), 1.0)
