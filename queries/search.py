"""The search index of each store version, as the query layer keeps it for this process.

``index_for(root, wait)`` answers with the opened index of the store's current version, or
with None and the reason the page's search falls back to the text scan. Without ``wait`` (the
app) a missing index is built on a background thread while the scan answers; with ``wait``
(the CLI, after a write and for ``auditatlas search``) it is built before returning.

The build reads the steps on its own DuckDB connection under ``BUILD_MEMORY`` and hands them
to ``auditatlas.search.index.build`` in batches of ``BATCH_ROWS`` (bounded memory at any size):
DuckDB streams ``to_arrow_reader``, tantivy's writer flushes segments at its heap size.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb
import pyarrow as pa

from auditatlas.duck import connect as duck_connect
from auditatlas.search import index as search_index
from auditatlas.search.index import StepIndex
from auditatlas.store import read_manifest, store_dir

from . import views
from .template import text

_log = logging.getLogger(__name__)

BUILD_MEMORY = "256MB"
BATCH_ROWS = 20_000


@dataclass(frozen=True)
class IndexChoice:
    """The index a search reads, or None and why (the search then says so and scans)."""

    index: StepIndex | None
    unavailable: str | None = None


def step_batches(root: Path, manifest: dict, rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The version's steps (``sql/search_steps.sql``) in Arrow batches of at most ``rows``."""
    con = duck_connect()
    try:
        con.execute(f"SET memory_limit = '{BUILD_MEMORY}'")
        con.execute("SET preserve_insertion_order = false")
        views.bind_table(con, root, manifest, "steps")
        reader = con.sql(text("search_steps")).to_arrow_reader(rows)
        yield from reader
    finally:
        con.close()


class Keeper:
    """The opened index of one store for this process, and its builds (one at a time)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._open: StepIndex | None = None
        self._building: str | None = None  # the key being built on the background thread
        self._failed: dict[str, str] = {}  # key -> why its build failed

    def choice(self, wait: bool) -> IndexChoice:
        manifest = read_manifest(self.root)
        key = search_index.index_key(manifest)
        with self._lock:
            if self._open is not None and self._open.key == key:
                return IndexChoice(self._open)
            opened = search_index.open_built(self.root, manifest)
            if opened is not None:
                self._replace(opened)
                return IndexChoice(opened)
            if key in self._failed:
                return IndexChoice(None, f"the index of this store version could not be built: {self._failed[key]}")
            if not wait:
                if self._building != key:
                    self._building = key
                    threading.Thread(target=self._build, args=(manifest, key), daemon=True,
                                     name=f"search-index-{key}").start()
                return IndexChoice(None, "the index of this store version is being built")
        self._build(manifest, key)
        with self._lock:
            if key in self._failed:
                return IndexChoice(None, f"the index of this store version could not be built: {self._failed[key]}")
            opened = search_index.open_built(self.root, manifest)
            if opened is None:  # removed between its build and now (a sweep): the scan answers
                return IndexChoice(None, "the index of this store version was removed before it could be opened")
            self._replace(opened)
            return IndexChoice(opened)

    def _replace(self, opened: StepIndex) -> None:
        if self._open is not None:
            self._open.close()  # a superseded version: its folder may now be swept
        self._open = opened

    def _build(self, manifest: dict, key: str) -> None:
        try:
            search_index.build(self.root, manifest, step_batches(self.root, manifest))
        except (duckdb.Error, OSError, ValueError, RuntimeError) as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            _log.warning("search index of %s not built (%s); search scans the text instead", self.root, reason)
            with self._lock:
                self._failed[key] = reason
        finally:
            with self._lock:
                if self._building == key:
                    self._building = None


_KEEPERS: dict[str, Keeper] = {}
_KEEPERS_LOCK = threading.Lock()


def keeper(root: str | Path | None) -> Keeper:
    path = Path(store_dir(root)).resolve()
    with _KEEPERS_LOCK:
        return _KEEPERS.setdefault(str(path), Keeper(path))


def index_for(root: str | Path | None = None, wait: bool = False) -> IndexChoice:
    """The index a search of the store at ``root`` reads now (see the module docstring)."""
    return keeper(root).choice(wait)
