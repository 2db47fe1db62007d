"""The search index of each store version, as the query layer builds and keeps it.

Built with the derived tables: the CLI builds the index of the version a write made right after
the write (``ensure_built``, from ``auditatlas.cli``), so the app finds it there. When the app
finds none (a store written before indexes existed, a build that failed, a store copied in by
hand) ``index_for(root)`` answers None and why, the page's search falls back to the text scan,
and the build starts in a process of its own (``python -m queries.search_build STORE``), never
on the app's thread: a million rooms take minutes of CPU the app's sessions need. The index's
build lease (``auditatlas.search.index.build``) keeps two sessions, or two app processes, from
both building it. With ``wait`` (``auditatlas search``) a missing index is built in the caller.

The build reads the steps on its own DuckDB connection under ``BUILD_MEMORY``: the version's
cells first (a few thousand rows), then the documents, JSON texts DuckDB writes
(``sql/search_steps.sql``), in Arrow batches of ``BATCH_ROWS`` (bounded memory at any size:
DuckDB streams ``to_arrow_reader``, tantivy's writer flushes segments at its heap size).
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from auditatlas.duck import connect as duck_connect
from auditatlas.errors import AtlasError, first_line
from auditatlas.search import index as search_index
from auditatlas.search.index import StepIndex
from auditatlas.store import read_manifest, store_dir

from . import views
from .template import text

_log = logging.getLogger(__name__)

BUILD_MEMORY = "256MB"
BATCH_ROWS = 20_000
# What a failed build raises that is not a bug: said in one line, and the scan answers.
BUILD_ERRORS = (AtlasError, duckdb.Error, OSError, ValueError, RuntimeError)
REPO = Path(__file__).resolve().parents[1]  # where `queries` and `auditatlas` are imported from
BEING_BUILT = "the index of this store version is being built"


@dataclass(frozen=True)
class IndexChoice:
    """The index a search reads, or None and why (the search then says so and scans)."""

    index: StepIndex | None
    unavailable: str | None = None


def build_index(root: Path, manifest: dict | None = None) -> Path:
    """Build the index of the store's version (``manifest``: its current one) in this process;
    its folder. ``search_index.Busy`` when another process is building it."""
    manifest = read_manifest(root) if manifest is None else manifest
    con = duck_connect()
    try:
        con.execute(f"SET memory_limit = '{BUILD_MEMORY}'")
        con.execute("SET preserve_insertion_order = false")
        views.bind_table(con, root, manifest, "steps")
        steps = text("search_steps")

        def read():
            # DuckDB drops the unread document column from the plan: this reads the slice columns only.
            cells = con.sql(f"SELECT DISTINCT * EXCLUDE (doc) FROM ({steps})").to_arrow_table().to_pylist()
            return cells, con.sql(f"SELECT doc FROM ({steps})").to_arrow_reader(BATCH_ROWS)

        return search_index.build(root, manifest, read)
    finally:
        con.close()


def ensure_built(root: Path) -> str | None:
    """Build the index of the store's current version unless it is built or being built (the CLI
    after a write); None, or why it could not be built."""
    manifest = read_manifest(root)
    if search_index.built_folder(root, manifest) is not None:
        return None
    try:
        build_index(root, manifest)
    except search_index.Busy:
        return None
    except BUILD_ERRORS as exc:
        return first_line(exc)
    return None




class Keeper:
    """The opened index of one store for this process, and the build process it started."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._open: StepIndex | None = None
        self._process: tuple[str, subprocess.Popen, Path] | None = None  # key, build, its stderr file
        self._failed: dict[str, str] = {}  # key -> why its build failed

    def choice(self, wait: bool) -> IndexChoice:
        manifest = read_manifest(self.root)
        key = search_index.index_key(manifest)
        with self._lock:
            opened = self._opened(manifest, key)
            if opened is not None:
                return IndexChoice(opened)
            if not wait:
                return IndexChoice(None, self._in_background(key))
        return self._built_here(manifest, key)

    def _opened(self, manifest: dict, key: str) -> StepIndex | None:
        if self._open is not None and self._open.key == key:
            return self._open
        opened = search_index.open_built(self.root, manifest)
        if opened is not None:
            if self._open is not None:
                self._open.close()  # a superseded version: its folder may now be swept
            self._open = opened
        return opened

    def _in_background(self, key: str) -> str:
        """Why there is no index now; starts its build process unless one is on the way."""
        self._collect(key)
        if key in self._failed:
            return f"the index of this store version could not be built: {self._failed[key]}"
        ours = self._process is not None and self._process[0] == key
        if not ours and not search_index.building(self.root, key):
            self._process = (key, *start_build(self.root))
        return BEING_BUILT

    def _collect(self, key: str) -> None:
        """Note the end of this process's build of ``key`` (and why, when it failed)."""
        if self._process is None:
            return
        built_key, process, errors = self._process
        if process.poll() is None:
            return
        self._process = None
        if built_key == key and process.returncode != 0:
            lines = [line for line in _read(errors).splitlines() if line.strip()]
            self._failed[key] = lines[-1].removeprefix("error: ") if lines else f"exit status {process.returncode}"
        errors.unlink(missing_ok=True)

    def _built_here(self, manifest: dict, key: str) -> IndexChoice:
        try:
            build_index(self.root, manifest)
        except search_index.Busy:
            _wait_for_builder(self.root, key)
        except BUILD_ERRORS as exc:
            reason = first_line(exc)
            _log.warning("search index of %s not built (%s); search scans the text instead", self.root, reason)
            return IndexChoice(None, f"the index of this store version could not be built: {reason}")
        with self._lock:
            opened = self._opened(manifest, key)
        if opened is None:  # removed between its build and now (a sweep), or the other builder failed
            return IndexChoice(None, "the index of this store version is not there after its build")
        return IndexChoice(opened)


def start_build(root: Path) -> tuple[subprocess.Popen, Path]:
    """Start ``python -m queries.search_build ROOT ERRORS`` (this checkout's code first on its
    path); the process and the file ERRORS its standard error goes to."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    fd, errors = tempfile.mkstemp(prefix="auditatlas-search-build-", suffix=".log")
    try:
        process = subprocess.Popen([sys.executable, "-m", "queries.search_build", str(root), errors], env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fd,
                                   start_new_session=True)  # the app's Ctrl-C does not cut it short
    finally:
        os.close(fd)
    return process, Path(errors)


def _wait_for_builder(root: Path, key: str, poll_s: float = 0.2) -> None:
    while search_index.building(root, key):
        time.sleep(poll_s)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


_KEEPERS: dict[str, Keeper] = {}
_KEEPERS_LOCK = threading.Lock()


def keeper(root: str | Path | None) -> Keeper:
    path = Path(store_dir(root)).resolve()
    with _KEEPERS_LOCK:
        return _KEEPERS.setdefault(str(path), Keeper(path))


def index_for(root: str | Path | None = None, wait: bool = False) -> IndexChoice:
    """The index a search of the store at ``root`` reads now (see the module docstring)."""
    return keeper(root).choice(wait)

