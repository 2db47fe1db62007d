"""The embedded default corpus: simulated MAADBench rooms, read through the real importer's
conversion, plus the CatchBench release and a standard panel of detector predictions.

The simulator itself lives in :mod:`auditatlas.simulator` (it writes release files; it is not
an adapter). This module only orchestrates. Rooms are simulated and converted chunk by chunk
(:mod:`auditatlas.ingest.simulated`): in this process for the default size, on a Dask cluster
for a large one, never through a temporary folder of JSON files (so an interrupted build
leaves nothing behind but a staging folder the next write removes).
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import first_line
from ..progress import Progress, or_quiet
from ..simulator import CORPUS, DEFAULT_ROOMS, KIND, SOURCE, simulate

__all__ = ["CORPUS", "DEFAULT_ROOMS", "KIND", "SOURCE", "build_default_store", "build_demo", "simulate"]


def build_demo(store: Path, rooms: int = DEFAULT_ROOMS, seed: int = 0, progress: Progress | None = None, *,
               scheduler: str | None = None, workers: int | None = None,
               notify: Callable[[str], None] | None = None,
               check: Callable[[Path], None] | None = None) -> dict:
    """Simulate ``rooms`` rooms and write them as source ``demo`` (corpus ``maadbench-sim``).

    Each room goes through ``maadbench.convert_documents``, the conversion a release file goes
    through after it is parsed. ``progress(fraction, message)`` hears about every chunk;
    ``check(staging)`` may refuse the staged corpus before it lands.
    """
    from .simulated import build

    report = or_quiet(progress)
    report(0.0, f"simulating and importing {rooms:,} rooms")
    result = build(store, rooms, seed, scheduler=scheduler, workers=workers, progress=report, notify=notify,
                   check=check)
    report(1.0, "demo corpus ready")
    return result


# The default store's size can be set from outside (tests build a few dozen rooms and one
# panel seed in a second instead of 1,500 rooms and 5 seeds in half a minute); `make run`
# leaves them unset.
ROOMS_ENV = "AUDITATLAS_DEFAULT_ROOMS"
SEEDS_ENV = "AUDITATLAS_DEFAULT_SEEDS"
PANEL_SEEDS = 5


def default_size() -> tuple[int, int]:
    """Rooms and panel seeds of the default store: 1,500 and 5 unless the environment says."""
    from ..errors import AtlasError

    sizes = []
    for name, fallback in ((ROOMS_ENV, DEFAULT_ROOMS), (SEEDS_ENV, PANEL_SEEDS)):
        raw = os.environ.get(name, "").strip()
        try:
            value = int(raw) if raw else fallback
        except ValueError:
            value = 0
        if value < 1:
            raise AtlasError(f"the environment variable {name} is '{raw}'; it must be a whole number of at least 1.")
        sizes.append(value)
    return sizes[0], sizes[1]


def build_default_store(store: Path, rooms: int = DEFAULT_ROOMS, seed: int = 0,
                        progress: Progress | None = None, *, panel: bool = True, seeds: int = PANEL_SEEDS,
                        scheduler: str | None = None, workers: int | None = None,
                        notify: Callable[[str], None] | None = None) -> dict:
    """The store the dashboard starts on: the simulated MAADBench corpus, the CatchBench release
    and (``panel``) the standard detector panel (``seeds`` seeds) on the simulated corpus.

    CatchBench is added only when its adapter can be imported (it ships with the package);
    its absence is reported in the result, not raised, so the demo still starts.
    """
    from ..store import store_lock

    report = or_quiet(progress)
    with store_lock(store, notify=notify):  # the whole default store is one writer's job
        return _build_default(store, rooms, seed, report, seeds if panel else 0, scheduler, workers, notify)


def ensure_default_store(store: Path, progress: Progress | None = None,
                         notify: Callable[[str], None] | None = None) -> bool:
    """Build the default store if ``store`` is empty; returns whether this call built it.

    Its size is :func:`default_size` (the environment may shrink it).

    The emptiness check and the build happen under the store lock, so several first visitors
    (threads of one app, or processes) build it once: the others wait, then find it built.
    """
    from ..store import is_empty, store_lock

    if not is_empty(store):
        return False
    with store_lock(store, notify=notify):
        if not is_empty(store):
            return False
        rooms, seeds = default_size()
        result = build_default_store(store, rooms=rooms, seeds=seeds, progress=progress, notify=notify)
        for sentence in result.get("written_but", []):  # what landed, and what did not
            if notify:
                notify(sentence)
        return True


# The sources the default store build replaces (the simulated corpus and the CatchBench release).
DEFAULT_SOURCES = (SOURCE, "catchbench")


def _build_default(store: Path, rooms: int, seed: int, report: Progress, seeds: int, scheduler: str | None,
                   workers: int | None, notify: Callable[[str], None] | None) -> dict:
    """The three steps, each checked before the first one writes as far as it can be.

    Before anything lands: the store's other sources are readable when the panel will read
    them, and the staged corpus can carry the panel. Once the corpus has landed, a step that
    fails is told in ``result["written_but"]`` (one sentence each), never raised: the command
    did change the store, and saying it failed would be untrue.
    """
    panel = seeds > 0
    if panel:
        _require_other_sources(store)
    check = None
    if panel:
        from ..detectors.panel import check_staged_corpus as check
    share = 0.45 if panel else 0.85
    result: dict[str, Any] = {"demo": build_demo(store, rooms, seed, lambda x, m: report(share * x, m),
                                                 scheduler=scheduler, workers=workers, notify=notify, check=check)}
    written_but: list[str] = []
    try:
        importlib.import_module("auditatlas.ingest.catchbench")
    except ImportError as exc:
        result["catchbench"] = {"skipped": f"the CatchBench adapter cannot be imported ({exc})."}
    else:
        from . import ingest

        report(share, "adding the CatchBench release")
        try:
            batch, entry = ingest("catchbench", None, store, notify=notify)
        except Exception as exc:  # noqa: BLE001 - the corpus has landed: told, not raised
            written_but.append(f"the simulated corpus was written, but the CatchBench release could not be added "
                               f"({first_line(exc)}).")
        else:
            result["catchbench"] = {"rows": entry["rows"], "notes": batch.notes}
    if panel:
        from ..detectors.panel import run_standard_panel

        report(0.5, f"scoring the standard detector panel (every registry detector, {seeds} seed{'s' if seeds > 1 else ''})")
        try:
            outcome = run_standard_panel(store, lambda x, m: report(0.5 + 0.5 * x, m), seeds=seeds)
        except Exception as exc:  # noqa: BLE001 - as above
            written_but.append(f"the simulated corpus was written, but the standard detector panel could not be "
                               f"scored ({first_line(exc)}).")
        else:
            result["panel"] = {"source": outcome.source, "sets": len(outcome.sets), "notes": outcome.notes,
                               "seconds": round(outcome.seconds, 1)}
    if written_but:
        result["written_but"] = written_but
    report(1.0, "default store ready")
    return result


def _require_other_sources(store: Path) -> None:
    """StoreError, before anything is written, when a source the build does not replace cannot
    be read: the panel reads the whole store, so it would fail once the corpus had landed."""
    from ..errors import StoreError
    from ..store import read_manifest, source_problem

    root = Path(store)
    manifest = read_manifest(root)
    problems = [problem for name, entry in sorted(manifest["sources"].items()) if name not in DEFAULT_SOURCES
                and (problem := source_problem(root, name, entry, deep=True)) is not None]
    if problems:
        raise StoreError(" ".join(problems) + " The standard detector panel reads every source, so nothing was "
                         "written; repair that source first, or build without the panel (`--no-panel`).")
