"""Adapters: one module per release format, each with the same small contract.

An adapter module defines

- ``FORMAT``: the name used on the command line (``auditatlas ingest FORMAT PATH``);
- ``can_read(path) -> bool``: a cheap look at whether ``path`` is in this format;
- ``read(path, context, **options) -> Batch``: the whole release converted into the schema,
  raising :class:`auditatlas.errors.IngestFailed` listing every problem (one line per file and
  field);
- optionally ``plan(path, context, **options) -> stream.Plan``: the same conversion in chunks
  (streamed, and run on worker processes for a large release; see :mod:`.stream`).

and one line of :data:`ADAPTERS` declares what the command line needs to know without importing
it: whether a PATH is needed, which options ``read``/``plan`` accept (each offered as
``--<name>``, refused for the other formats) and whether it streams (``--scheduler`` and
``--workers`` apply). The CLI builds its ``ingest`` arguments from these declarations and
never names a format. What an adapter reads and checks comes from the toolkit
(:mod:`.kit`: JSON reading, field checks, row buffers), so its module holds only its
conversion rules.

Adding a corpus means adding one module here and one line to ``ADAPTERS``. Nothing outside
this package parses a release format.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import first_line
from ..progress import Progress


@dataclass(frozen=True)
class Option:
    """A keyword argument of an adapter's ``read``/``plan``, offered on the CLI as ``--<name>``."""

    name: str
    type: Callable[[str], Any]  # parses the command-line text (argparse reports a bad value)
    help: str
    required: bool = False  # the format cannot be read without it (said in one sentence, exit 2)


@dataclass(frozen=True)
class Adapter:
    """One registry line: where the adapter lives and what its command line takes."""

    module: str  # imported lazily, so one broken optional reader never blocks the rest
    needs_path: bool = True  # False: ``read(None, ...)`` reads a default release (e.g. package data)
    options: tuple[Option, ...] = ()
    streams: bool = False  # the module has ``plan``: chunked, on worker processes when large
    # The batch ``read`` returns is added to its source by the module's ``append(batch, store,
    # wait=, notify=)``, under the store lock, instead of replacing the source: reviewers' verdicts.
    appends: bool = False
    # The module's ``read_batches`` returns a Batch whose ``parts`` stream (bounded memory, one
    # process); the CLI uses it instead of ``read``, which stays the one-batch reading.
    batches: bool = False

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)


def _group(text: str) -> str:
    from .otlp_mapping import group_type  # imported when the option is used, as the adapters are

    return group_type(text)


# Your own traces and labels name the corpus they make or label (also its store source).
_CORPUS = Option("corpus", str, "the corpus name (also its store source; required)", required=True)
_GROUP_HELP = "trace (default): one run per trace; session: one run per session.id / gen_ai.conversation.id"

ADAPTERS: dict[str, Adapter] = {
    "maadbench": Adapter("auditatlas.ingest.maadbench", streams=True),
    "whowhen": Adapter("auditatlas.ingest.whowhen"),
    "taubench": Adapter("auditatlas.ingest.taubench"),
    "catchbench": Adapter("auditatlas.ingest.catchbench", needs_path=False),  # default: the installed package
    "otlp": Adapter("auditatlas.ingest.otlp", options=(_CORPUS, Option("group", _group, _GROUP_HELP)), batches=True),
    "atif": Adapter("auditatlas.ingest.atif", options=(_CORPUS,)),
    "messages": Adapter("auditatlas.ingest.messages", options=(_CORPUS,)),
    "claude-code": Adapter("auditatlas.ingest.claude_code", options=(_CORPUS,)),
    "traces": Adapter("auditatlas.ingest.traces", options=(_CORPUS,)),  # detected per file: one of the three
    "labels": Adapter("auditatlas.ingest.labels", options=(_CORPUS,)),
    "predictions": Adapter("auditatlas.ingest.predictions", options=(
        Option("method", str, "the method name (default: from the file or folder)"),
        Option("seed", int, "the seed (default: from a seed_<n> folder)"),
    )),
    "reviews": Adapter("auditatlas.ingest.verdict_files", appends=True),  # verdicts, added to the reviews source
}


def formats_with(test: Callable[[Adapter], bool]) -> list[str]:
    """The formats whose declaration passes ``test``, in registry order."""
    return [fmt for fmt, spec in ADAPTERS.items() if test(spec)]


def declared_options() -> dict[str, tuple[Option, list[str]]]:
    """Every option any adapter declares, with the formats that accept it (first declaration wins)."""
    found: dict[str, tuple[Option, list[str]]] = {}
    for fmt, spec in ADAPTERS.items():
        for option in spec.options:
            found.setdefault(option.name, (option, []))[1].append(fmt)
    return found


def usage_problem(fmt: str, path: str | Path | None, options: dict[str, Any]) -> str | None:
    """The sentence for a command line the declaration of ``fmt`` rules out, or None.

    ``options``: the adapter options given (None values already left out).
    """
    spec = ADAPTERS[fmt]
    if path is None and spec.needs_path:
        return f"format '{fmt}' needs a PATH to read."
    missing = [o.name for o in spec.options if o.required and options.get(o.name) is None]
    if missing:
        return f"format '{fmt}' needs {_and(['--' + m + ' ' + m.upper() for m in missing])}."
    refused = [name for name in options if name not in spec.option_names]
    if refused:
        owners = declared_options()[refused[0]][1]
        flags = [o.name for owner in owners for o in ADAPTERS[owner].options]
        flags = list(dict.fromkeys(flags))
        return (f"{_and(['--' + f for f in flags])} apply to the {_and(owners)} "
                f"format{'s' if len(owners) > 1 else ''} only.")
    return None


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass
class Batch:
    """What one ingest writes: the store source it replaces and its tables."""

    source: str
    tables: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # told to the user (e.g. unjoined rows)
    meta: dict[str, Any] = field(default_factory=dict)  # kept in the manifest entry
    # Instead of ``tables``: the tables as a stream of batches (whole runs each), written one by
    # one and switched in together once the stream ends; raising mid-way writes nothing.
    parts: Iterable[dict[str, Any]] | None = None
    bucket_of: Callable[[str], str] | None = None  # run id -> sort bucket, when ``parts`` are not in run order


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
    return importlib.import_module(ADAPTERS[fmt].module)


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
    progress: Progress | None = None,
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
    if ADAPTERS[fmt].streams:
        from .stream import run_plan

        plan = module.plan(Path(path) if path is not None else None, context, **options)
        plan.meta = {**meta, **plan.meta}
        outcome = run_plan(plan, store, client=client, scheduler=scheduler, workers=workers, progress=progress,
                           wait=wait, notify=notify)
        notes = outcome.notes + after_write_notes(store, plan.source)
        return Batch(source=plan.source, tables={}, notes=notes, meta=plan.meta), outcome.entry
    if ADAPTERS[fmt].appends and not (scheduler or workers):
        batch = module.read(Path(path), context, **options)
        return batch, module.append(batch, Path(store), wait=wait, notify=notify)
    if scheduler or workers:  # 0 workers is "this process only", which a one-pass read always is
        streaming = ", ".join(formats_with(lambda spec: spec.streams))
        raise AtlasError(f"format '{fmt}' is read in one pass; --scheduler and --workers apply to {streaming}.")
    read = module.read_batches if ADAPTERS[fmt].batches else module.read
    batch = read(Path(path) if path is not None else None, context, **options)
    if batch.parts is not None:
        entry = store_mod.write_batches(store, batch.source, batch.parts, meta={**meta, **batch.meta},
                                        wait=wait, notify=notify, bucket_of=batch.bucket_of)
    else:
        entry = store_mod.write_source(store, batch.source, batch.tables, meta={**meta, **batch.meta},
                                       wait=wait, notify=notify)
    batch.notes.extend(after_write_notes(store, batch.source))
    return batch, entry


def after_write_notes(store: str | Path, source: str) -> list[str]:
    """:func:`stale_notes` once ``source`` has landed; a store whose other sources cannot be
    read gets a note saying what was not looked up, never an error for a write that happened."""
    try:
        return stale_notes(store, source)
    except Exception as exc:  # noqa: BLE001 - the source is written: anything now is a note
        return [f"written, but the re-scored prediction sets this write makes stale could not be looked up "
                f"({first_line(exc)})."]




def stale_notes(store: str | Path, source: str) -> list[str]:
    """What a re-ingest of ``source`` invalidates: re-scored sets computed from its old data.

    They stay in the store (re-scoring never replaces another source, and an ingest never
    deletes one), but their features and splits were read from runs that have just changed.
    """
    from queries import runner

    from ..detectors.stale import stale_prediction_sets

    stale = stale_prediction_sets(runner(store), store, source)
    if not stale:
        return []
    shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
    return [f"{len(stale)} re-scored prediction set(s) were computed from the previous data of source '{source}' "
            f"and are now stale: {shown}. Re-run `auditatlas score`, or drop them with `auditatlas remove`."]


def _lookup(root: Path) -> Callable[[str, list | None], Any]:
    def run(sql: str, params: list | None = None):
        import duckdb

        from queries import connect

        from ..errors import StoreError
        from ..store import health

        con = connect(root)
        try:
            return con.sql(sql, params=params or []).to_arrow_table()
        except duckdb.Error:
            # A part that fails only when scanned: the store's own sentence, before anything lands.
            problems = health(root, deep=True)
            if problems:
                raise StoreError(" ".join(problems)) from None
            raise

    return run
