"""Adapters: one module per release format, each with the same small contract.

An adapter module defines

- ``FORMAT``: the name used on the command line (``auditatlas ingest FORMAT PATH``);
- ``can_read(path) -> bool``: a cheap look at whether ``path`` is in this format;
- ``read(path, context) -> Batch``: the whole release converted into the schema, raising
  :class:`auditatlas.errors.IngestFailed` listing every problem (one line per file and field).

Adding a corpus means adding one module here and one line to ``ADAPTERS``. Nothing outside
this package parses a release format.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

# FORMAT -> module path; imported lazily so one broken optional reader never blocks the rest.
ADAPTERS: dict[str, str] = {
    "maadbench": "auditatlas.ingest.maadbench",
    "whowhen": "auditatlas.ingest.whowhen",
    "taubench": "auditatlas.ingest.taubench",
    "catchbench": "auditatlas.ingest.catchbench",
    "predictions": "auditatlas.ingest.predictions",
}


@dataclass
class Batch:
    """What one ingest writes: the store source it replaces and its tables."""

    source: str
    tables: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # told to the user (e.g. unjoined rows)
    meta: dict[str, Any] = field(default_factory=dict)  # kept in the manifest entry


@dataclass
class Context:
    """What an adapter may need beyond its own files.

    ``lookup`` runs a parameter-bound read-only query against the current store (the
    predictions adapter joins released rows to steps already there).
    """

    store: Path
    lookup: Callable[[str, list | None], Any] | None = None

    def __post_init__(self) -> None:
        if self.lookup is None:
            self.lookup = _lookup(Path(self.store))


def adapter(fmt: str) -> ModuleType:
    from ..errors import AtlasError

    if fmt not in ADAPTERS:
        raise AtlasError(f"unknown format '{fmt}'; choose one of: {', '.join(ADAPTERS)}.")
    return importlib.import_module(ADAPTERS[fmt])


def ingest(
    fmt: str,
    path: str | Path | None,
    store: str | Path,
    *,
    wait: bool = True,
    notify: Callable[[str], None] | None = None,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[dict], None] | None = None,
    **options: Any,
) -> tuple[Batch, dict]:
    """Read ``path`` with the adapter of ``fmt`` and replace its source in ``store``.

    ``options`` go to the adapter (e.g. ``method``/``seed`` for predictions). An adapter with a
    streaming ``plan`` is run chunk by chunk (on ``client``, a Dask client, when given), so no
    process holds the whole release; the others return one batch from ``read``.
    ``wait``/``notify``: what to do when another writer holds the store lock.
    """
    from .. import store as store_mod
    from ..errors import AtlasError

    module = adapter(fmt)
    if path is not None and not Path(path).exists():
        raise AtlasError(f"{path}: no such file or folder.")
    context = Context(store=Path(store))
    meta = {"format": fmt, "origin": str(path or "")}
    if hasattr(module, "plan"):
        from .stream import run_plan

        plan = module.plan(Path(path) if path is not None else None, context, **options)
        plan.meta = {**meta, **plan.meta}
        outcome = run_plan(plan, store, client=client, scheduler=scheduler, workers=workers, progress=progress,
                           wait=wait, notify=notify)
        notes = outcome.notes + stale_notes(store, plan.source)
        return Batch(source=plan.source, tables={}, notes=notes, meta=plan.meta), outcome.entry
    if scheduler or workers:
        raise AtlasError(f"format '{fmt}' is read in one pass; --scheduler and --workers apply to maadbench.")
    batch = module.read(Path(path) if path is not None else None, context, **options)
    entry = store_mod.write_source(store, batch.source, batch.tables, meta={**meta, **batch.meta},
                                   wait=wait, notify=notify)
    batch.notes.extend(stale_notes(store, batch.source))
    return batch, entry


def stale_notes(store: str | Path, source: str) -> list[str]:
    """What a re-ingest of ``source`` invalidates: re-scored sets computed from its old data.

    They stay in the store (re-scoring never replaces another source, and an ingest never
    deletes one), but their features and splits were read from runs that have just changed.
    """
    from ..detectors.stale import stale_prediction_sets

    stale = stale_prediction_sets(store, source)
    if not stale:
        return []
    shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
    return [f"{len(stale)} re-scored prediction set(s) were computed from the previous data of source '{source}' "
            f"and are now stale: {shown}. Re-run `auditatlas score`, or drop them with `auditatlas remove`."]


def _lookup(root: Path) -> Callable[[str, list | None], Any]:
    def run(sql: str, params: list | None = None):
        from queries import connect

        con = connect(root)
        return con.sql(sql, params=params or []).to_arrow_table()

    return run
