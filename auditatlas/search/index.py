"""The search index of one store version on disk: where it lives, how it is built, opened and
swept.

Where: ``STORE/search/<key>/`` where ``key`` hashes the folders of the sources that hold steps
(a source's folder is new at every write, ``store.Staging.commit``) and the index layout. A
write that adds no step (a re-score, predictions, verdicts) keeps the key, so it never re-indexes
a million rooms' text; a new version of any step never reads an old index. A store folder that
cannot be written gets its indexes under the system temp folder instead.

How: once it holds the build lease the builder reads the version's cells (``fields``) and its
documents, a stream of Arrow batches of JSON texts DuckDB writes under a memory limit
(``queries/search.py``), and adds each with ``add_json`` to a tantivy writer whose heap is
``WRITER_HEAP`` (it writes a segment whenever the heap fills), so memory stays bounded at any
corpus size. It writes into the scratch ``.tmp-<key>/`` beside the indexes and renames the
folder into place when committed: readers see a whole index or none, and a failed build leaves
nothing a reader would open (search then falls back to the text scan).

One builder per key: the scratch's name is the key's, and its builder holds an exclusive lease
on it for the whole build (``building``), so a second process asking for the same index (another
app session, the CLI after a write) sees the build in progress instead of starting its own.

Leases and sweeping follow the derived tables (``queries/derived.py``): each open index holds a
shared lease; a sweep (``auditatlas.leases.sweep``) removes what no live process holds, except the
index being kept and the two newest younger than a minute.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import tantivy

from .. import leases
from ..store import read_manifest
from . import fields

SEARCH_DIR = "search"
SCRATCH_PREFIX = leases.SCRATCH_PREFIX
# Bump when the fields, their tokenizers or the documents' SQL change.
LAYOUT = "2"
# tantivy's writer heap, shared by its threads: it writes a segment when full, so this bounds
# the build's memory beside DuckDB's limit (queries/search.py).
WRITER_HEAP = 256 * 1024 * 1024
# Two indexing threads: the build runs in the CLI after a write or in its own process beside
# the app (never on the app's thread), so it may use both cores; the main thread meanwhile
# reads the next documents and parses their JSON (a fifth of the work).
WRITER_THREADS = 2
DONE = ".complete"  # written last inside the scratch: an index without it is not one
CELLS = "cells.json"  # the index's cell table (fields: every cell id with its values)


@dataclass(eq=False)
class StepIndex:
    """One opened index, its cell table and the reader's lease on its folder (kept while the
    index is in use)."""

    folder: Path
    index: tantivy.Index
    cells: list[dict[str, Any]]
    lease: leases.Lease | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return self.folder.name

    def cell(self, cell_id: int) -> Mapping[str, Any]:
        return self._by_id.get(cell_id, {})

    @property
    def _by_id(self) -> dict[int, dict[str, Any]]:
        if "_cells_by_id" not in self.__dict__:
            self.__dict__["_cells_by_id"] = {int(c[fields.CELL]): c for c in self.cells}
        return self.__dict__["_cells_by_id"]

    def close(self) -> None:
        if self.lease is not None:
            self.lease.release()
            self.lease = None


def step_sources(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, folder) of the sources whose steps the index reads: those holding any (a source
    without a row count for steps, from an older store, counts as holding some)."""
    held = []
    for name, entry in sorted(manifest.get("sources", {}).items()):
        if entry.get("rows", {}).get("steps", 1) != 0:
            held.append((name, str(entry.get("dir", ""))))
    return held


def index_key(manifest: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(f"{LAYOUT}:{tantivy.__version__}".encode())
    digest.update(json.dumps(step_sources(manifest)).encode())
    return digest.hexdigest()[:20]


def home(store: Path) -> Path:
    """``STORE/search``, or a folder under the system temp folder when the store is read-only."""
    return leases.writable_home(Path(store) / SEARCH_DIR, "search", Path(store))


def _temp_home(store: Path) -> Path:
    return leases.temp_home("search", store)


def _places(store: Path) -> tuple[Path, Path]:
    return Path(store) / SEARCH_DIR, _temp_home(Path(store))


def built_folder(store: Path, manifest: Mapping[str, Any] | None = None) -> Path | None:
    """The folder of the built index of the store's version (``manifest``: its current one), or None."""
    key = index_key(read_manifest(store) if manifest is None else manifest)
    for place in _places(store):
        if (place / key / DONE).is_file():
            return place / key
    return None


def building(store: Path, key: str) -> bool:
    """Whether a live process is building the index ``key`` of the store now."""
    return any((place / f"{SCRATCH_PREFIX}{key}").is_dir() and not leases.is_free(place / f"{SCRATCH_PREFIX}{key}")
               for place in _places(store))


def open_index(folder: Path) -> StepIndex | None:
    """The index in ``folder`` with a shared lease on it; None when it is gone or unreadable."""
    lease = leases.hold(folder, shared=True)
    if lease is None:
        return None
    try:
        index = tantivy.Index.open(str(folder))
        cells = json.loads((folder / CELLS).read_text())
    except (ValueError, OSError):
        lease.release()
        return None
    return StepIndex(folder, index, cells, lease)


def open_built(store: Path, manifest: Mapping[str, Any] | None = None) -> StepIndex | None:
    """The built index of the store's version, opened; None when there is none (yet)."""
    folder = built_folder(store, manifest)
    return None if folder is None else open_index(folder)


class Busy(Exception):
    """Another live process is building this index now."""


Reader = Callable[[], tuple[Sequence[Mapping[str, Any]], Iterable[pa.RecordBatch]]]


def build(store: Path, manifest: Mapping[str, Any], read: Reader) -> Path:
    """Index the version ``manifest`` into its folder; returns it. ``read()`` gives the version's
    distinct cells and its documents (batches whose first column is one step's JSON text per
    row); it is called once the build lease is held, so a build that is not needed reads nothing.
    Busy when another process holds the key's scratch (its build is on the way)."""
    place = home(store)
    key = index_key(manifest)
    folder = place / key
    scratch = place / f"{SCRATCH_PREFIX}{key}"
    scratch.mkdir(parents=True, exist_ok=True)
    lease = leases.hold(scratch)
    if lease is None:
        raise Busy(key)
    try:
        if (folder / DONE).is_file():  # built by the process that held the scratch before us
            return folder
        _empty(scratch)
        cells, documents = read()
        _check_cells(cells)
        (scratch / CELLS).write_text(json.dumps([dict(c) for c in cells], default=_plain))
        index = tantivy.Index(fields.schema(), path=str(scratch))
        writer = index.writer(heap_size=WRITER_HEAP, num_threads=WRITER_THREADS)
        for batch in documents:
            for text in batch.column(0).to_pylist():
                writer.add_json(text)
        writer.commit()
        writer.wait_merging_threads()
        (scratch / DONE).touch()
        try:
            os.replace(scratch, folder)
        except OSError:
            if not (folder / DONE).is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # a failed build: nothing a reader would open
        lease.release()
    remove_stale(place, keep=folder.name)
    return folder


def _empty(scratch: Path) -> None:
    """Remove what a dead builder left in the scratch (its lease file stays: it is ours now)."""
    for path in scratch.iterdir():
        if path.name == leases.LEASE:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _check_cells(cells: Sequence[Mapping[str, Any]]) -> None:
    ids = [int(c[fields.CELL]) for c in cells]
    if len(set(ids)) != len(ids):  # two cells with one hash: the slice could not tell them apart
        raise ValueError("two slice cells share one hash; the index cannot restrict hits to the slice")


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def remove_stale(place: Path, keep: str | None) -> list[str]:
    """Remove the indexes and scratch no live process holds, except ``keep``; the names removed."""
    return leases.sweep(place, keep)
