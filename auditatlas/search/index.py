"""The search index of one store version on disk: where it lives, how it is built, opened and
swept.

Where: ``STORE/search/<key>/`` where ``key`` hashes the store version (``store.manifest_bytes``:
the manifest less the reviews source, as the derived tables key it) and the index layout, so a
new version never reads an old index. A store folder that cannot be written gets its indexes
under the system temp folder instead.

How: the builder is handed the version's step rows as a stream of Arrow batches (the query
layer reads them from DuckDB under a memory limit, ``queries/search.py``) and adds them to a
tantivy writer whose heap is ``WRITER_HEAP`` (it writes a segment whenever the heap fills), so
memory stays bounded at any corpus size. It writes into ``.tmp-<token>/`` beside the indexes
and renames the folder into place when committed: readers see a whole index or none, and a
failed build leaves nothing a reader would open (search then falls back to the text scan).

Leases and sweeping follow the derived tables (``queries/derived.py``): the scratch holds an
exclusive lease while it builds, each open index a shared one; a sweep removes what no live
process holds, except the index being kept.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import tantivy

from .. import leases
from ..store import manifest_bytes, read_manifest
from . import fields

SEARCH_DIR = "search"
SCRATCH_PREFIX = ".tmp-"
# Bump when the fields or their tokenizers change.
LAYOUT = "1"
# tantivy's writer heap: it flushes a segment when full (at least 15 MB per thread).
WRITER_HEAP = 128 * 1024 * 1024
WRITER_THREADS = 1  # two cores shared with the app and DuckDB: one indexing thread
DONE = ".complete"  # written last inside the scratch: an index without it is not one
# An index younger than this is kept by a sweep even when nobody holds it: a write's CLI builds
# its version's index for the app's next search, which an older reader's sweep must not remove.
FRESH_S = 60.0


@dataclass(eq=False)
class StepIndex:
    """One opened index and the reader's lease on its folder (kept while the index is in use)."""

    folder: Path
    index: tantivy.Index
    lease: leases.Lease | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return self.folder.name

    def close(self) -> None:
        if self.lease is not None:
            self.lease.release()
            self.lease = None


def index_key(manifest: dict) -> str:
    digest = hashlib.sha256(f"{LAYOUT}:{tantivy.__version__}".encode())
    digest.update(manifest_bytes(manifest))
    return digest.hexdigest()[:20]


def home(store: Path) -> Path:
    """``STORE/search``, or a folder under the system temp folder when the store is read-only."""
    own = Path(store) / SEARCH_DIR
    try:
        own.mkdir(parents=True, exist_ok=True)
        probe = own / f".probe-{uuid.uuid4().hex}"
        probe.touch()
        probe.unlink()
        return own
    except OSError:
        alt = _temp_home(Path(store))
        alt.mkdir(parents=True, exist_ok=True)
        return alt


def _temp_home(store: Path) -> Path:
    return Path(tempfile.gettempdir()) / "auditatlas-search" / hashlib.sha256(str(store).encode()).hexdigest()[:16]


def built_folder(store: Path, manifest: dict | None = None) -> Path | None:
    """The folder of the built index of the store's version (``manifest``: its current one), or None."""
    manifest = read_manifest(store) if manifest is None else manifest
    key = index_key(manifest)
    for place in (Path(store) / SEARCH_DIR, _temp_home(Path(store))):
        if (place / key / DONE).is_file():
            return place / key
    return None


def open_index(folder: Path) -> StepIndex | None:
    """The index in ``folder`` with a shared lease on it; None when it is gone or unreadable."""
    lease = leases.hold(folder, shared=True)
    if lease is None:
        return None
    try:
        index = tantivy.Index.open(str(folder))
    except (ValueError, OSError):
        lease.release()
        return None
    return StepIndex(folder, index, lease)


def open_built(store: Path, manifest: dict | None = None) -> StepIndex | None:
    """The built index of the store's version, opened; None when there is none (yet)."""
    folder = built_folder(store, manifest)
    return None if folder is None else open_index(folder)


def build(store: Path, manifest: dict, batches: Iterable[pa.RecordBatch]) -> Path:
    """Index the step rows ``batches`` of the version ``manifest`` into its folder; returns it.

    Two processes racing both build; one rename wins and the other's scratch is removed.
    """
    place = home(store)
    folder = place / index_key(manifest)
    scratch = place / f"{SCRATCH_PREFIX}{uuid.uuid4().hex}"
    scratch.mkdir(parents=True)
    building = leases.hold(scratch)  # a sweep leaves the scratch of a live builder alone
    try:
        index_schema = fields.schema()
        index = tantivy.Index(index_schema, path=str(scratch))
        writer = index.writer(heap_size=WRITER_HEAP, num_threads=WRITER_THREADS)
        for batch in batches:
            for row in batch.to_pylist():
                writer.add_document(fields.document(row, index_schema))
        writer.commit()
        writer.wait_merging_threads()
        (scratch / DONE).touch()
        try:
            os.replace(scratch, folder)
        except OSError:
            if not (folder / DONE).is_file():  # another process won the race with the same build
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if building is not None:
            building.release()
    remove_stale(place, keep=folder.name)
    return folder


def remove_stale(place: Path, keep: str | None) -> list[str]:
    """Remove the indexes and scratch no live process holds, except ``keep``; the names removed."""
    removed: list[str] = []
    try:
        entries = list(place.iterdir())
    except OSError:
        return removed
    now = time.time()
    for path in entries:
        if path.name == keep or not path.is_dir():
            continue
        if not path.name.startswith(SCRATCH_PREFIX) and now - _mtime(path) < FRESH_S:
            continue
        if leases.remove_if_free(path):
            removed.append(path.name)
    return removed


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()
