"""The Parquet store: one folder per ingest source, switched in atomically by a manifest.

Layout::

    STORE/MANIFEST.json                  {"format": 4, "sources": {NAME: {"dir", ...}}, "retired": [...]}
    STORE/sources/NAME-<token>/TABLE/part-NNNNN.parquet   parts of every table of auditatlas.schema
    STORE/.lock, STORE/.lock-holder      the writer lock and who holds it
    STORE/derived/                       the query layer's cache of derived tables (queries/derived.py);
                                         recovery removes the scratch of a build whose builder died

Writes stream: a :class:`SourceWriter` takes the store lock, removes leftovers of interrupted
writes, appends batches as Parquet parts to a staging folder (nothing holds a whole corpus),
checks the invariants over the staged files in DuckDB, renames the folder into ``sources/``
and replaces MANIFEST.json with ``os.replace`` (atomic on POSIX). Readers only ever see a
whole old or a whole new source, and a failed ingest leaves the manifest, and so the store,
exactly as it was.

Why a lock: the manifest is read, changed and written back; two writers without a lock lose
one another's source (seen in 28 of 100 trials before it existed). One writer at a time, the
others wait (or, asked not to, fail saying who holds it).

Why replaced folders are *retired*, not deleted: a reader (the app's DuckDB views, a page
mid-query) may still be reading the old files. A retired folder is listed in the manifest and
removed by a later write once it has been retired for ``RETIRE_GRACE_S``.

What a batch becomes before it is written (the schema's shape, the slice keys on the steps,
the chains, the run counts, the ranks) is ``auditatlas.store_batches``; how its Parquet parts
are written sorted by run and merged at commit is ``auditatlas.store_parts``; how a writer that adds
a few runs at a time (the live receiver) keeps them in sorted segments instead of one run
order is ``auditatlas.store_segments`` (``SourceWriter.carry_segments``). This module
re-exports the names adapters, workers and tests use (``conform``, ``prepare``,
``write_part``, ``write_prepared``, ``ROW_GROUP_ROWS``).

A *source* is an ingest unit (``whowhen``, ``catchbench``, ``demo``...), not a corpus: one
source may bring rows of several corpora (the CatchBench release brings the PRE configs and the
Who&When judge predictions), and every row carries its own ``corpus``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import leases
from . import store_segments as segs
from .errors import StoreBusy, StoreError
from .schema import LATER_TABLES, SORT_KEYS, TABLES, empty_table
from .store_batches import TableLike, conform, prepare  # noqa: F401 - re-exported
from .store_parts import (  # noqa: F401
    ROW_GROUP_ROWS,
    key_lt,
    link_part,
    part_key,
    part_label,
    resort,
    table_corpora,
    table_parts,
    write_part,
    write_prepared,
)
from .validate import CHECKED_TABLES, check_added, check_staged

MANIFEST = "MANIFEST.json"
# 3: runs carry anomalous_steps and chain_length (the run list sorts on them without steps).
# 4: steps carry chain_role and chain_length (every chain view reads them); the manifest
#    entry of a source lists the corpora of its runs (run_corpora).
# 5: one word per meaning: prediction_sets.origin (release | rescore), configs.config_source.
FORMAT = 5
LOCK = ".lock"
LOCK_HOLDER = ".lock-holder"
STAGING_PREFIX = ".staging-"
TMP_PREFIX = ".tmp-"  # scratch folders a write makes inside the store (removed by recovery)
DERIVED_DIR = "derived"  # the query layer's cache of derived tables (queries/derived.py)
RETIRE_GRACE_S = 120.0
DEFAULT_STORE = Path(__file__).resolve().parent.parent / "data" / "store"
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,80}$")

Notify = Callable[[str], None]
StagedCheck = Callable[[Path], None]  # raises (one sentence) when the staged source must not land


def store_dir(path: str | Path | None = None) -> Path:
    """The store folder: explicit path, else $AUDITATLAS_STORE, else ./data/store."""
    if path:
        return Path(path)
    env = os.environ.get("AUDITATLAS_STORE")
    return Path(env) if env else DEFAULT_STORE


# =============================================================================================
# Reading the manifest


def read_manifest(root: str | Path) -> dict:
    """The manifest, or an empty one when the store does not exist yet.

    Raises StoreError with one sentence naming the problem and what to do.
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise StoreError(f"{root} is a file, not a store folder; point --store or AUDITATLAS_STORE at a folder.")
    path = root / MANIFEST
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {"format": FORMAT, "sources": {}, "retired": []}
    except OSError as exc:
        raise StoreError(f"{path} cannot be read ({exc.strerror or exc}); check the folder's permissions.") from exc
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path} is corrupt (not JSON: {exc.msg}); restore it or rebuild the store "
                         "(delete the folder, then `auditatlas demo` or `auditatlas ingest`).") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sources"), dict):
        raise StoreError(f"{path}: field 'sources' is missing; the file is not an Audit Atlas store manifest.")
    if manifest.get("format", 1) != FORMAT:
        raise StoreError(f"{path}: the store was written in format {manifest.get('format', 1)} by an older Audit Atlas; "
                         f"this version reads format {FORMAT}. Rebuild it (delete the folder, then `auditatlas demo` "
                         "or re-ingest your releases).")
    manifest.setdefault("retired", [])
    return manifest


# The sources people add to by hand: reviewers' verdicts (``verdicts.py``) and authors' tours
# (``views/tours.py``). Named here, where the store decides what a write to them keeps.
REVIEWS_SOURCE = "reviews"
TOURS_SOURCE = "tours"


def side_sources() -> tuple[str, ...]:
    """The sources people add to by hand (reviewers' verdicts, authors' tours): no derived
    table, step vector or search index reads them, so a write to them keeps those caches."""
    return (REVIEWS_SOURCE, TOURS_SOURCE)


def data_manifest(manifest: Mapping[str, Any]) -> dict:
    """``manifest`` less the side sources (and their retired folders): the store version as
    every table but the verdicts and the tours sees it."""
    side = side_sources()
    return {**manifest, "sources": {k: v for k, v in manifest.get("sources", {}).items() if k not in side},
            "retired": [r for r in manifest.get("retired", []) if r.get("source") not in side]}


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest as the store writes it (``_write_manifest``), less the side sources
    (``data_manifest``). The derived tables hash these bytes, so a build keyed by another
    process reading the same file is found, and a verdict or a tour saved (each replaces its
    own source) does not rebuild them: none of them reads verdicts or tours. (The search index
    keys on less: the sources holding steps, ``auditatlas.search.index.index_key``.)
    """
    if any(name in manifest.get("sources", {}) for name in side_sources()):
        manifest = data_manifest(manifest)
    return json.dumps(manifest, indent=2, sort_keys=True).encode()


def table_files(root: str | Path, table: str, manifest: dict | None = None) -> list[str]:
    """Parquet parts holding ``table`` across all sources, in source-name then part order.

    Sources whose folder is missing are skipped here; :func:`health` reports them.
    """
    root = Path(root)
    manifest = manifest if manifest is not None else read_manifest(root)
    files: list[str] = []
    for name in sorted(manifest["sources"]):
        folder = root / manifest["sources"][name]["dir"] / table
        try:
            if folder.is_dir():
                files.extend(str(p) for p in table_parts(folder.parent, table))
        except OSError as exc:  # a folder it may not enter: never a view silently without the source
            raise StoreError(_unreadable_source(name, folder.parent, exc)) from exc
    return files


def _unreadable_source(name: str, folder: Path, exc: OSError) -> str:
    return (f"source '{name}': its folder {folder} cannot be read ({exc.strerror or exc}); check its permissions, "
            f"re-ingest it or remove it with `auditatlas remove {name}`.")


def is_empty(root: str | Path) -> bool:
    return not read_manifest(root)["sources"]


def source_corpora(root: str | Path, manifest: dict | None = None) -> dict[str, list[str]]:
    """The corpora whose runs each store source holds: ``{source: [corpus, ...]}`` (sorted).

    Recorded in the source's manifest entry (``run_corpora``) when it is written. A source
    entry without the record (written before it existed) is answered from its runs parts'
    ``corpus`` column, here and nowhere else.
    """
    root = Path(root)
    manifest = manifest if manifest is not None else read_manifest(root)
    held: dict[str, list[str]] = {}
    for name, entry in sorted(manifest["sources"].items()):
        recorded = entry.get("run_corpora")
        held[name] = sorted(recorded) if isinstance(recorded, list) else _read_run_corpora(root / str(entry.get("dir", "")))
    return held


def source_run_ids(root: str | Path, source: str) -> set[str]:
    """The run ids source ``source`` holds now (empty when the store has no such source).

    For a writer that adds runs to a source (the live receiver) and must not reuse an id; read
    under the writer lock, it is exactly what a following :meth:`SourceWriter.carry` carries.
    """
    root = Path(root)
    entry = read_manifest(root)["sources"].get(source)
    if entry is None:
        return set()
    held: set[str] = set()
    for part in table_parts(root / str(entry["dir"]), "runs"):
        held.update(r for r in pq.read_table(part, columns=["run_id"]).column("run_id").to_pylist() if r is not None)
    return held


def _read_run_corpora(folder: Path) -> list[str]:
    held: set[str] = set()
    for part in table_parts(folder, "runs"):
        with pq.ParquetFile(part) as f:
            held.update(f.read(columns=["corpus"]).column("corpus").unique().to_pylist())
    return sorted(c for c in held if c is not None)


def health(root: str | Path, deep: bool = False) -> list[str]:
    """Problems that make the store (or one of its sources) unreadable, one sentence each.

    Checks the manifest, that every source folder and table exists, and (``deep``) that every
    Parquet footer can be read. An empty list means healthy.
    """
    root = Path(root)
    try:
        manifest = read_manifest(root)
    except StoreError as exc:
        return [str(exc)]
    if root.exists() and not os.access(root, os.R_OK | os.X_OK):
        return [f"{root} cannot be read (permission denied); check the folder's permissions."]
    return [problem for name, entry in sorted(manifest["sources"].items())
            if (problem := source_problem(root, name, entry, deep)) is not None]


def source_problem(root: Path, name: str, entry: Mapping[str, Any], deep: bool = False) -> str | None:
    """The sentence saying why source ``name`` cannot be read, or None (see :func:`health`)."""
    folder = root / str(entry.get("dir", ""))
    try:
        if not folder.is_dir():
            return (f"source '{name}' is listed in the manifest but its folder {folder} is missing; "
                    f"re-ingest it or remove it with `auditatlas remove {name}`.")
        if not os.access(folder, os.R_OK | os.X_OK):
            raise PermissionError(13, "permission denied")
        for table in TABLES:
            if (folder / table).is_dir() and not os.access(folder / table, os.R_OK | os.X_OK):
                raise PermissionError(13, "permission denied")
            parts = table_parts(folder, table)
            if not parts and table in LATER_TABLES and not (folder / table).exists():
                continue  # written before the table existed: it holds none of its rows
            if not parts:
                return (f"source '{name}' has no Parquet file for table '{table}' ({folder / table}); "
                        f"re-ingest it or remove it with `auditatlas remove {name}`.")
            if deep:
                bad = _unreadable_part(parts)
                if bad:
                    return (f"source '{name}': {bad} is corrupt (not readable Parquet); "
                            f"re-ingest it or remove it with `auditatlas remove {name}`.")
    except OSError as exc:
        return _unreadable_source(name, folder, exc)
    return None


def _unreadable_part(parts: list[Path]) -> str | None:
    for part in parts:
        try:
            pq.read_metadata(part)
        except Exception:  # noqa: BLE001 - any failure to read a footer means corrupt
            return str(part)
    return None


# =============================================================================================
# The writer lock


_PROCESS_LOCKS: dict[str, threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()
_HELD: dict[str, list] = {}  # root -> [file descriptor, depth]


def _process_lock(key: str) -> threading.RLock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(key, threading.RLock())


def lock_holder(root: str | Path) -> str:
    try:
        return (Path(root) / LOCK_HOLDER).read_text().strip() or "another writer"
    except OSError:
        return "another writer"


@contextmanager
def store_lock(root: str | Path, wait: bool = True, notify: Notify | None = None) -> Iterator[None]:
    """Hold the store's writer lock (re-entrant within a process, an flock across processes).

    A writer that finds the lock taken says so through ``notify`` and waits, or with
    ``wait=False`` raises StoreBusy naming the holder.
    """
    import fcntl

    root = Path(root)
    if root.exists() and not root.is_dir():
        raise StoreError(f"{root} is a file, not a store folder; point --store or AUDITATLAS_STORE at a folder.")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"the store folder {root} cannot be made ({exc.strerror or exc}); "
                         "point --store or AUDITATLAS_STORE at a folder you can write.") from exc
    key = str(root.resolve())
    rlock = _process_lock(key)
    if not rlock.acquire(blocking=False):
        if not wait:
            raise StoreBusy(f"the store {root} is being written by {lock_holder(root)}; try again when it finishes.")
        if notify:
            notify(f"waiting for the store lock held by {lock_holder(root)}…")
        rlock.acquire()
    try:
        held = _HELD.get(key)
        if held is None:
            try:
                fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(f"{root} cannot be written ({exc.strerror or exc}); "
                                 "check the folder's permissions.") from exc
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if not wait:
                        raise StoreBusy(f"the store {root} is being written by {lock_holder(root)}; "
                                        "try again when it finishes.") from None
                    if notify:
                        notify(f"waiting for the store lock held by {lock_holder(root)}…")
                    fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            _write_holder(root)
            held = _HELD[key] = [fd, 0]
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
            if held[1] == 0:
                del _HELD[key]
                try:
                    (root / LOCK_HOLDER).unlink(missing_ok=True)
                finally:
                    fcntl.flock(held[0], fcntl.LOCK_UN)
                    os.close(held[0])
    finally:
        rlock.release()


def _write_holder(root: Path) -> None:
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:4]))
    text = f"process {os.getpid()} ({command or 'python'}) since {datetime.now(timezone.utc).isoformat(timespec='seconds')}"
    try:
        (root / LOCK_HOLDER).write_text(text)
    except OSError:
        pass


# =============================================================================================
# Recovery


def recover(root: str | Path, notify: Notify | None = None) -> list[str]:
    """Remove leftovers of interrupted writes; call with the lock held. Returns what it removed.

    Leftovers: staging folders, temporary manifests, scratch folders, source folders the
    manifest does not know (a crash between the rename and the manifest switch), and retired
    folders past their grace period.
    """
    root = Path(root)
    if not root.is_dir():
        return []
    manifest = read_manifest(root)
    removed: list[str] = []
    for path in sorted(root.iterdir()):
        if path.name.startswith((STAGING_PREFIX, TMP_PREFIX, ".manifest-")):
            _remove(path)
            removed.append(path.name)
    live = {Path(e["dir"]).name for e in manifest["sources"].values()}
    now = time.time()
    keep_retired, expired = [], []
    for item in manifest["retired"]:
        (expired if now - float(item.get("at", 0)) >= RETIRE_GRACE_S else keep_retired).append(item)
    retired_names = {Path(item["dir"]).name for item in keep_retired}
    sources = root / "sources"
    if sources.is_dir():
        for path in sorted(sources.iterdir()):
            if path.name not in live and path.name not in retired_names:
                _remove(path)
                removed.append(f"sources/{path.name}")
    if expired:
        manifest["retired"] = keep_retired
        _write_manifest(root, manifest)
    removed += _dead_derived_scratch(root)
    if removed and notify:
        notify("removed leftovers of interrupted writes: " + ", ".join(removed))
    return removed


def _dead_derived_scratch(root: Path) -> list[str]:
    """Remove ``derived/.tmp-*`` folders whose build died (its lease is free, auditatlas.leases)."""
    home = root / DERIVED_DIR
    if not home.is_dir():
        return []
    removed = []
    for path in sorted(home.iterdir()):
        if path.name.startswith(TMP_PREFIX) and leases.remove_if_free(path):
            removed.append(f"{DERIVED_DIR}/{path.name}")
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# =============================================================================================
# Writing a source


class SourceWriter:
    """Write one source as a stream of batches, then switch it in atomically.

    ::

        with SourceWriter(root, "maadbench") as writer:
            for batch in adapter_batches:
                writer.append(batch)
            entry = writer.commit(meta)

    Leaving the block without ``commit`` (an exception, a bad file found late) removes the
    staging folder: the store stays exactly as it was.
    """

    def __init__(self, root: str | Path, source: str, *, wait: bool = True, notify: Notify | None = None) -> None:
        if not _SOURCE_NAME.match(source):
            raise StoreError(f"source name '{source}' must be lower-case letters, digits, '.', '_' or '-'.")
        self.root = Path(root)
        self.source = source
        self.wait = wait
        self.notify = notify
        self.staging: Path | None = None
        self.rows: dict[str, int] = dict.fromkeys(TABLES, 0)
        self._seq = 0
        self._last_key: dict[str, tuple | None] = dict.fromkeys(TABLES, None)
        self._unsorted: set[str] = set()
        self._run_corpora: set[str] = set()
        self._lock_cm = None
        self.committed: dict | None = None
        self.bucket_of: Callable[[str], str] | None = None  # set by a plan whose chunks are not in run order
        # Set by carry_segments: the staged parts of each segment of the SEGMENTED tables,
        # oldest first (auditatlas.store_segments); None for a write that keeps one run order.
        self._segments: dict[str, list[list[Path]]] | None = None
        self._added: dict[str, list[Path]] = {}  # parts of the rows this write brings (checked alone)
        # Rows written again that an earlier write had written (merges, runs dropped from a
        # part): the cost segments keep bounded, counted here so a test can hold them to it.
        self.rewritten: dict[str, int] = dict.fromkeys(TABLES, 0)
        self._check_whole = False  # a segmented write carrying rows the added-rows checks cannot vouch for

    def __enter__(self) -> SourceWriter:
        self._lock_cm = store_lock(self.root, wait=self.wait, notify=self.notify)
        self._lock_cm.__enter__()
        try:
            recover(self.root, self.notify)
            self.staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{self.source}-", dir=self.root))
        except BaseException:
            self._lock_cm.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.staging is not None and self.staging.exists():
                shutil.rmtree(self.staging, ignore_errors=True)
        finally:
            self._lock_cm.__exit__(*exc)

    # -- batches ---------------------------------------------------------------------------

    def append(self, tables: Mapping[str, TableLike]) -> None:
        """Prepare one batch (whole runs) and write it as the next part of each table (into the
        sort buckets of ``bucket_of`` when set: batches not in run order; as a new segment of
        each SEGMENTED table after ``carry_segments``)."""
        prepared = prepare(tables)
        if self._segments is None:
            self.record(write_prepared(self.staging, prepared, self.next_seq(), self.bucket_of))
            return
        for name in segs.SEGMENTED:
            table = prepared.pop(name, None)
            if table is not None and table.num_rows:
                sink = segs.PartSink(self.staging, name, self._temp_label)
                sink.add(table)
                self._segments[name].append(sink.close())
                self._added.setdefault(name, []).extend(sink.parts)
                self.rows[name] += table.num_rows
                if name == "runs":
                    self._run_corpora.update(table_corpora(table.column("corpus")))
        seq = self.next_seq()
        self.record(write_prepared(self.staging, prepared, seq))
        for name, table in prepared.items():
            if table.num_rows:  # write_prepared writes a table with rows as this one part
                self._added.setdefault(name, []).append(self.staging / name / f"part-{part_label(seq)}.parquet")

    def _temp_label(self) -> str:
        return f"t{self.next_seq():06d}"  # renamed at commit (store_segments.finalize)

    def next_seq(self) -> int:
        """The number of the next batch; batches are kept in the order of these numbers."""
        self._seq += 1
        return self._seq - 1

    def record(self, written: Mapping[str, Mapping[str, Any]]) -> None:
        """Account for a batch written by ``write_prepared`` (here or on a worker), in batch order."""
        for name, info in written.items():
            self.rows[name] += int(info["rows"])
            self._run_corpora.update(info.get("corpora", ()))
            if info.get("bucketed"):
                self._unsorted.add(name)
                continue
            first, last = info.get("first"), info.get("last")
            if first is None:
                continue
            prev = self._last_key[name]
            if prev is not None and key_lt(tuple(first), prev):
                self._unsorted.add(name)
            self._last_key[name] = tuple(last)

    def carry(self, drop_runs: Collection[str] = (), skip: Collection[str] = ()) -> dict[str, int]:
        """Take the rows the source holds now into this write, leaving out the runs in
        ``drop_runs`` (the write brings them anew) and the tables in ``skip``. Returns the rows
        carried per table.

        What a writer that adds to a source calls (the live receiver: earlier traces kept, new
        ones added): the old source's parts are already prepared, so a part that loses no run
        is hard-linked into the staging folder (a committed part is never changed), and one that
        does is rewritten without those runs, a part at a time. Parts out of run order with the
        new batches are merged at commit as any out-of-order batch is.
        """
        assert self.staging is not None, "carry() outside the with-block"
        entry = read_manifest(self.root)["sources"].get(self.source)
        carried = dict.fromkeys(TABLES, 0)
        if entry is None:
            return carried
        folder = self.root / str(entry["dir"])
        dropped = pa.array(sorted(drop_runs), pa.string())
        for name in TABLES:
            if name in skip:
                continue
            for part in table_parts(folder, name):
                carried[name] += self._carry_part(name, part, dropped)
        return carried

    def carry_segments(self, drop_runs: Collection[str] = (), skip: Collection[str] = ()) -> dict[str, int]:
        """``carry`` for a writer that adds a few runs to a large source at every write (the live
        receiver): the SEGMENTED tables are carried as their sorted segments and the rows
        appended next become a segment of their own, merged at commit only with segments not
        much larger (``auditatlas.store_segments``), so a write costs about its own rows, not the
        source's. The other tables are carried as ``carry`` carries them.

        A segment's part that may hold a run of ``drop_runs`` (by its run_id statistics) is
        re-written without them; every other part is hard-linked.
        """
        assert self.staging is not None, "carry_segments() outside the with-block"
        assert not self._seq, "carry_segments() first: appended batches would not be segments"
        self._segments = {name: [] for name in segs.SEGMENTED}
        entry = read_manifest(self.root)["sources"].get(self.source)
        carried = dict.fromkeys(TABLES, 0)
        if entry is None:
            return carried
        folder = self.root / str(entry["dir"])
        dropped = sorted(drop_runs)
        recorded = entry.get("segments") or {}
        for name in TABLES:
            if name in skip:
                continue
            if name not in segs.SEGMENTED:
                dropped_array = pa.array(dropped, pa.string())
                for part in table_parts(folder, name):
                    carried[name] += self._carry_part(name, part, dropped_array)
                self._check_whole |= bool(carried[name]) and name in CHECKED_TABLES
                continue
            for parts in segs.committed_segments(folder, name, recorded.get(name)):
                kept = [self._carry_segment_part(name, part, dropped) for part in parts]
                segment = [path for path, _ in kept if path is not None]
                if segment:
                    self._segments[name].append(segment)
                carried[name] += sum(rows for _, rows in kept)
        return carried

    def _carry_segment_part(self, name: str, part: Path, dropped: list[str]) -> tuple[Path | None, int]:
        """One part of a segment into the staging folder (without ``dropped`` runs); its path there and rows."""
        target = self.staging / name / f"part-{self._temp_label()}.parquet"
        if segs.may_hold(part, dropped):
            table = pq.read_table(part).replace_schema_metadata(None)
            before = table.num_rows
            gone = pc.is_in(table["run_id"], value_set=pa.array(dropped, pa.string()))
            table = conform(name, table.filter(pc.invert(gone)))
            if table.num_rows < before:
                self.rewritten[name] += table.num_rows
                if not table.num_rows:
                    return None, 0
                write_part(self.staging, name, target.name[len("part-"):-len(".parquet")], table)
                self._count_carried(name, part, table.num_rows, table)
                return target, table.num_rows
        rows = pq.read_metadata(part).num_rows
        if not rows:
            return None, 0
        link_part(part, target)
        self._count_carried(name, target, rows, None)
        return target, rows

    def _count_carried(self, name: str, part: Path, rows: int, table: pa.Table | None) -> None:
        self.rows[name] += rows
        if name == "runs":
            self._run_corpora.update(
                segs.run_corpora(part) if table is None
                else table_corpora(table.column("corpus")))

    def _carry_part(self, name: str, part: Path, dropped: pa.Array) -> int:
        keys = list(SORT_KEYS.get(name, ()))
        wanted = list(dict.fromkeys(keys + (["run_id"] if "run_id" in TABLES[name].names else [])
                                    + (["corpus"] if name == "runs" else [])))
        head = pq.read_table(part, columns=wanted) if wanted else None
        if head is not None and "run_id" in wanted and len(dropped) and pc.any(pc.is_in(head["run_id"], value_set=dropped)).as_py():
            table = pq.read_table(part)
            table = conform(name, table.filter(pc.invert(pc.is_in(table["run_id"], value_set=dropped))))
            if table.num_rows:
                self.record(write_prepared(self.staging, {name: table}, self.next_seq()))
            return table.num_rows
        rows = pq.read_metadata(part).num_rows
        if rows == 0:
            return 0
        seq = self.next_seq()
        link_part(part, self.staging / name / f"part-{part_label(seq)}.parquet")
        info: dict[str, Any] = {"rows": rows}
        if keys:
            info["first"], info["last"] = part_key(head, name, 0), part_key(head, name, -1)
        if name == "runs":
            info["corpora"] = table_corpora(head["corpus"])
        self.record({name: info})
        return rows

    # -- commit ----------------------------------------------------------------------------

    def commit(self, meta: Mapping[str, Any] | None = None, check: StagedCheck | None = None) -> dict:
        """Check invariants over the staged files, then switch the source in. Returns its entry.

        ``check(staging)``: what the caller still needs of the staged source before it lands
        (the default store's panel needs enough room groups); raising leaves the store unchanged.
        """
        assert self.staging is not None, "commit() outside the with-block"
        for name in sorted(self._unsorted):
            resort(self.staging, name, self.bucket_of)
        spill = scratch_dir(self.root, "check")
        try:
            segments = self._commit_segments(spill) if self._segments is not None else None
            for name in TABLES:  # every table present, so views never guess a shape
                if not table_parts(self.staging, name):
                    write_part(self.staging, name, part_label(0), empty_table(name))
            if segments is None or self._check_whole:
                check_staged(self.staging, self.source, spill)
        finally:
            shutil.rmtree(spill, ignore_errors=True)
        if check is not None:
            check(self.staging)
        folder = f"{self.source}-{uuid.uuid4().hex[:12]}"
        (self.root / "sources").mkdir(parents=True, exist_ok=True)
        os.replace(self.staging, self.root / "sources" / folder)
        self.staging = None
        manifest = read_manifest(self.root)
        old = manifest["sources"].get(self.source)
        entry = {
            "dir": f"sources/{folder}",
            "ingested_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "rows": dict(self.rows),
            "sorted_by": {name: list(keys) for name, keys in SORT_KEYS.items()},
            "run_corpora": sorted(self._run_corpora),
            **({"segments": segments} if segments is not None else {}),
            **dict(meta or {}),
        }
        manifest["sources"][self.source] = entry
        if old:
            manifest["retired"].append({"dir": old["dir"], "at": time.time(), "source": self.source})
        _write_manifest(self.root, manifest)
        self.committed = entry
        return entry

    def _commit_segments(self, spill: Path) -> dict[str, list[int]]:
        """Check the rows this write adds (the carried ones were checked when they landed and
        lost only whole runs), merge the newest segments that are due, name the parts; the rows
        of each segment, oldest first, for the manifest.

        Checked before merging, while the added rows are in parts of their own; a source that
        carries rows of tables the checks join across (predictions, configs) is checked whole.
        """
        assert self._segments is not None
        added = {p for parts in self._added.values() for p in parts}
        if not self._check_whole:
            held_runs = [p for segment in self._segments["runs"] for p in segment if p not in added]
            check_added(self._added, held_runs, self.source, spill)
        layout: dict[str, list[int]] = {}
        for name, segments in self._segments.items():
            rows = [sum(pq.read_metadata(p).num_rows for p in segment) for segment in segments]
            k = segs.merges_due(rows)
            if k:
                sink = segs.PartSink(self.staging, name, self._temp_label)
                merged = segs.merge(segments[-k:], name, sink)
                if merged != sum(rows[-k:]):
                    raise StoreError(f"merging the segments of table '{name}' gave {merged} rows of "
                                     f"{sum(rows[-k:])}; nothing was written.")
                for part in (p for segment in segments[-k:] for p in segment):
                    part.unlink()
                segments[-k:], rows[-k:] = [sink.parts], [merged]
                self.rewritten[name] += merged
            segs.finalize(self.staging, name, segments)
            layout[name] = rows
        # Arrow keeps freed buffers for reuse: handing a merge's back keeps a long-lived writer
        # (the receiver) at about one write's memory between writes, as write_batches does.
        pa.default_memory_pool().release_unused()
        return layout


# The manifest keys SourceWriter.commit sets itself; the rest of a source's entry is its writer's meta.
WRITER_KEYS = ("dir", "ingested_at", "rows", "sorted_by", "run_corpora", "segments")


def source_meta(entry: Mapping[str, Any] | None) -> dict[str, Any]:
    """A source entry's own metadata (what its writer passed to ``commit``), for a writer that
    rewrites the source and keeps what it said (the receiver, planted flips)."""
    return {k: v for k, v in (entry or {}).items() if k not in WRITER_KEYS}


def write_source(
    root: str | Path,
    source: str,
    tables: Mapping[str, TableLike],
    meta: Mapping[str, Any] | None = None,
    *,
    wait: bool = True,
    notify: Notify | None = None,
) -> dict:
    """Replace source ``source`` with ``tables`` (one batch), atomically. Returns its manifest entry."""
    return write_batches(root, source, [tables], meta, wait=wait, notify=notify)


def write_batches(
    root: str | Path,
    source: str,
    batches: Iterable[Mapping[str, TableLike]],
    meta: Mapping[str, Any] | None = None,
    *,
    wait: bool = True,
    notify: Notify | None = None,
    bucket_of: Callable[[str], str] | None = None,
) -> dict:
    """Replace source ``source`` with ``batches`` (each whole runs), written one at a time as they
    come and switched in once the last is written: memory holds one batch. An exception from the
    stream leaves the store as it was. Returns the source's manifest entry.

    ``bucket_of`` (run id -> sort bucket, see ``write_prepared``): for batches whose runs are not
    in run order; the commit then merges one bucket at a time instead of sorting whole tables.
    """
    with SourceWriter(root, source, wait=wait, notify=notify) as writer:
        writer.bucket_of = bucket_of
        for tables in batches:
            writer.append(tables)
            # Arrow keeps freed buffers for reuse; handing them back keeps the writer at one batch.
            pa.default_memory_pool().release_unused()
        return writer.commit(meta)


def remove_source(root: str | Path, source: str, *, wait: bool = True, notify: Notify | None = None) -> bool:
    """Drop a source from the store (atomic). Returns whether it was there."""
    root = Path(root)
    with store_lock(root, wait=wait, notify=notify):
        recover(root, notify)
        manifest = read_manifest(root)
        old = manifest["sources"].pop(source, None)
        if old is None:
            return False
        manifest["retired"].append({"dir": old["dir"], "at": time.time(), "source": source})
        _write_manifest(root, manifest)
        return True


def scratch_dir(root: str | Path, purpose: str) -> Path:
    """A scratch folder inside the store that recovery removes if its writer dies."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{purpose}-", dir=root))


def _write_manifest(root: Path, manifest: dict) -> None:
    manifest = {**manifest, "format": FORMAT}
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=root)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(manifest, fh, indent=2, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, root / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
