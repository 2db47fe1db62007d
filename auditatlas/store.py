"""The Parquet store: one folder per ingest source, switched in atomically by a manifest.

Layout::

    STORE/MANIFEST.json                  {"format": 2, "sources": {NAME: {"dir", ...}}, "retired": [...]}
    STORE/sources/NAME-<token>/TABLE/part-NNNNN.parquet   parts of every table of auditatlas.schema
    STORE/.lock, STORE/.lock-holder      the writer lock and who holds it

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

Why the sort: every table is written sorted by run (``schema.SORT_KEYS``) in small row groups,
with the sort recorded in each file's Parquet metadata, so fetching one run reads one or two
row groups (min/max statistics prune the rest). The run's slice keys are copied onto its steps
(``schema.STEP_SLICE_KEYS``) so slice aggregates scan one table.

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
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import StoreBusy, StoreError
from .schema import RUN_STEP_COUNTS, SORT_KEYS, STEP_SLICE_KEYS, TABLES, empty_table

MANIFEST = "MANIFEST.json"
# 3: runs carry anomalous_steps and chain_length (the run list sorts on them without steps).
FORMAT = 3
LOCK = ".lock"
LOCK_HOLDER = ".lock-holder"
STAGING_PREFIX = ".staging-"
TMP_PREFIX = ".tmp-"  # scratch folders a write makes inside the store (removed by recovery)
RETIRE_GRACE_S = 120.0
DEFAULT_STORE = Path(__file__).resolve().parent.parent / "data" / "store"
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,80}$")

# Rows per row group: small for the tables one run is fetched from (a run is a few to a few
# hundred steps), Parquet's default elsewhere.
ROW_GROUP_ROWS: dict[str, int] = {"steps": 8192, "edges": 16384, "predictions": 16384, "runs": 16384}

TableLike = Any  # pa.Table | pandas.DataFrame | list[dict]
Notify = Callable[[str], None]


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


def table_files(root: str | Path, table: str, manifest: dict | None = None) -> list[str]:
    """Parquet parts holding ``table`` across all sources, in source-name then part order.

    Sources whose folder is missing are skipped here; :func:`health` reports them.
    """
    root = Path(root)
    manifest = manifest if manifest is not None else read_manifest(root)
    files: list[str] = []
    for name in sorted(manifest["sources"]):
        folder = root / manifest["sources"][name]["dir"] / table
        if folder.is_dir():
            files.extend(str(p) for p in sorted(folder.glob("part-*.parquet")))
    return files


def is_empty(root: str | Path) -> bool:
    return not read_manifest(root)["sources"]


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
    problems = []
    for name, entry in sorted(manifest["sources"].items()):
        folder = root / str(entry.get("dir", ""))
        if not folder.is_dir():
            problems.append(f"source '{name}' is listed in the manifest but its folder {folder} is missing; "
                            f"re-ingest it or remove it with `auditatlas remove {name}`.")
            continue
        for table in TABLES:
            parts = sorted((folder / table).glob("part-*.parquet"))
            if not parts:
                problems.append(f"source '{name}' has no Parquet file for table '{table}' ({folder / table}); "
                                f"re-ingest it or remove it with `auditatlas remove {name}`.")
                break
            if deep:
                bad = _unreadable_part(parts)
                if bad:
                    problems.append(f"source '{name}': {bad} is corrupt (not readable Parquet); "
                                    f"re-ingest it or remove it with `auditatlas remove {name}`.")
                    break
    return problems


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
    root.mkdir(parents=True, exist_ok=True)
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
            fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
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
    if removed and notify:
        notify("removed leftovers of interrupted writes: " + ", ".join(removed))
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# =============================================================================================
# Preparing batches


def conform(name: str, data: TableLike | None) -> pa.Table:
    """Cast adapter output to the schema of table ``name`` (missing columns become null)."""
    schema = TABLES[name]
    if data is None:
        return empty_table(name)
    if isinstance(data, list):
        cols = {f.name: [row.get(f.name) for row in data] for f in schema}
        return pa.table(cols, schema=schema)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        data = pa.Table.from_pandas(data, preserve_index=False)
    unknown = set(data.column_names) - set(schema.names)
    if unknown:
        raise StoreError(f"table '{name}' has columns outside the schema: {sorted(unknown)}")
    arrays = []
    for field in schema:
        if field.name in data.column_names:
            arrays.append(data.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(data.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def prepare(tables: Mapping[str, TableLike]) -> dict[str, pa.Table]:
    """One batch in the store's shape: conformed, slice keys on steps, ranks, sorted by run.

    A batch holds whole runs (a run's steps and edges come with it), so the slice keys and the
    per-run ranks can be computed batch by batch.
    """
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise StoreError(f"unknown table(s) {sorted(unknown)}; the schema has {list(TABLES)}.")
    out = {name: conform(name, data) for name, data in tables.items() if data is not None}
    if "runs" in out and out["runs"].num_rows:
        out["runs"] = _with_step_counts(out["runs"], out.get("steps"))
    if "steps" in out and out["steps"].num_rows and "runs" in out and out["runs"].num_rows:
        out["steps"] = _with_run_keys(out["steps"], out["runs"])
    if "predictions" in out and out["predictions"].num_rows:
        out["predictions"] = _with_ranks(out["predictions"])
    for name, table in out.items():
        if table.num_rows > 1 and name in SORT_KEYS:
            out[name] = table.sort_by([(k, "ascending") for k in SORT_KEYS[name]])
    return out


def _with_run_keys(steps: pa.Table, runs: pa.Table) -> pa.Table:
    """Copy each run's slice keys onto its steps (a step's own value, if any, is overwritten)."""
    import pyarrow.compute as pc

    index = pc.index_in(steps.column("run_id"), value_set=runs.column("run_id"))
    for key in STEP_SLICE_KEYS:
        values = pc.take(runs.column(key), index)
        steps = steps.set_column(steps.schema.get_field_index(key), key, values.cast(TABLES["steps"].field(key).type))
    return steps


def _with_step_counts(runs: pa.Table, steps: pa.Table | None) -> pa.Table:
    """Each run's anomalous steps and chain length, from the batch's steps (0 without any).

    Chain length is the most steps labeled 1 in one scope (steps without a scope count as one
    scope), when they are 2 or more, else 0: the run list's "chain" column. Counted with
    Arrow's group_by (null scopes form one group, as SQL's GROUP BY): DuckDB here held on to
    about 100 MB of a worker's memory after every chunk.
    """
    anomalous = pa.array([0] * runs.num_rows, pa.int64())
    chain = anomalous
    if steps is not None and steps.num_rows:
        failed = steps.select(["run_id", "scope", "label"]).filter(pc.equal(steps.column("label"), 1))
        per_scope = failed.group_by(["run_id", "scope"]).aggregate([([], "count_all")])
        n = per_scope.column("count_all")
        per_scope = per_scope.append_column("chain", pc.if_else(pc.greater_equal(n, 2), n, 0))
        counts = per_scope.group_by("run_id").aggregate([("count_all", "sum"), ("chain", "max")])
        index = pc.index_in(runs.column("run_id"), value_set=counts.column("run_id"))
        anomalous = pc.fill_null(pc.take(counts.column("count_all_sum"), index), 0).cast(pa.int64())
        chain = pc.fill_null(pc.take(counts.column("chain_max"), index), 0).cast(pa.int64())
    for key, values in zip(RUN_STEP_COUNTS, (anomalous, chain)):
        runs = runs.set_column(runs.schema.get_field_index(key), key, values)
    return runs


def _with_ranks(predictions: pa.Table) -> pa.Table:
    """Rank of each step-level score within (set_id, run_id): 1 = highest, ties to the earlier step."""
    import duckdb

    con = duckdb.connect()
    try:
        con.register("p", predictions)
        ranked = con.sql("""
            SELECT * REPLACE (
                CASE WHEN step_idx IS NOT NULL AND run_id IS NOT NULL THEN
                    row_number() OVER (PARTITION BY set_id, run_id, (step_idx IS NOT NULL)
                                       ORDER BY score DESC NULLS LAST, step_idx)
                END AS rank)
            FROM p
        """).to_arrow_table()
    finally:
        con.close()
    return conform("predictions", ranked)


BUCKETED = "b"  # the label prefix of parts written by bucket (merged at commit)


def part_label(seq: int, bucket: str | None = None) -> str:
    """A part's name: parts list in label order, which is the store's row order.

    ``bucket`` marks a part written out of run order (a worker's share of one sort range); at
    commit the parts of each bucket are merged and sorted, buckets in label order, so a bucket
    must cover a run-id range that sorts before the next bucket's.
    """
    return f"{seq:06d}" if bucket is None else f"{bucket}~{seq:06d}"


def write_part(folder: str | Path, table: str, label: str | int, data: pa.Table) -> Path:
    """Write one prepared batch of ``table`` as part ``label`` of a staging folder.

    Module-level so a Dask worker can write its partition's parts itself (the store must then
    be on a file system the workers share).
    """
    target = Path(folder) / table
    target.mkdir(parents=True, exist_ok=True)
    if isinstance(label, int):
        label = part_label(label)
    path = target / f"part-{label}.parquet"
    keys = SORT_KEYS.get(table, ())
    sorting = [pq.SortingColumn(data.schema.get_field_index(k)) for k in keys] if data.num_rows else None
    meta = {b"auditatlas.sorted_by": ",".join(keys).encode()} if keys else {}
    data = data.replace_schema_metadata({**(data.schema.metadata or {}), **meta})
    pq.write_table(data, path, compression="zstd", row_group_size=ROW_GROUP_ROWS.get(table, 65536),
                   sorting_columns=sorting)
    return path


def write_prepared(folder: str | Path, tables: Mapping[str, pa.Table], seq: int,
                   bucket_of: Callable[[str], str] | None = None) -> dict[str, dict]:
    """Write a prepared batch as parts numbered ``seq``; returns per table its rows and key range.

    With ``bucket_of`` (run id -> sort bucket; buckets must sort as their run ids do) the batch
    is not in global run order: each table is written as one part whose row groups never
    straddle two buckets, so the commit can merge the parts bucket by bucket, reading only the
    row groups of one bucket at a time. This is what a Dask worker runs.
    """
    written: dict[str, dict] = {}
    for name, table in tables.items():
        if table.num_rows == 0:
            continue
        if bucket_of is None or "run_id" not in table.column_names or name not in SORT_KEYS:
            write_part(folder, name, part_label(seq), table)
            written[name] = {"rows": table.num_rows, "first": _key(table, name, 0), "last": _key(table, name, -1)}
            continue
        _write_bucketed(Path(folder) / name / f"part-{part_label(seq, BUCKETED)}.parquet", name, table, bucket_of)
        written[name] = {"rows": table.num_rows, "bucketed": True}
    return written


def _write_bucketed(path: Path, name: str, table: pa.Table, bucket_of: Callable[[str], str]) -> None:
    """``table`` (prepared: sorted by its keys) as one part whose row groups never straddle a
    bucket."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run_ids = table.column("run_id").to_pylist()
    cuts = [0] + [i for i in range(1, len(run_ids)) if run_ids[i] != run_ids[i - 1]
                  and bucket_of(run_ids[i] or "~") != bucket_of(run_ids[i - 1] or "~")] + [len(run_ids)]
    with pq.ParquetWriter(path, table.schema, compression="zstd") as writer:
        for lo, hi in zip(cuts, cuts[1:]):
            writer.write_table(table.slice(lo, hi - lo), row_group_size=ROW_GROUP_ROWS.get(name, 65536))


def _key(table: pa.Table, name: str, i: int) -> list | None:
    keys = SORT_KEYS.get(name)
    return [table.column(k)[i].as_py() for k in keys] if keys else None


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
        self._lock_cm = None
        self.committed: dict | None = None
        self.bucket_of: Callable[[str], str] | None = None  # set by a plan whose chunks are not in run order

    def __enter__(self) -> "SourceWriter":
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
        """Prepare one batch (whole runs) and write it as the next part of each table."""
        self.record(write_prepared(self.staging, prepare(tables), self.next_seq()))

    def next_seq(self) -> int:
        """The number of the next batch; batches are kept in the order of these numbers."""
        self._seq += 1
        return self._seq - 1

    def record(self, written: Mapping[str, Mapping[str, Any]]) -> None:
        """Account for a batch written by ``write_prepared`` (here or on a worker), in batch order."""
        for name, info in written.items():
            self.rows[name] += int(info["rows"])
            if info.get("bucketed"):
                self._unsorted.add(name)
                continue
            first, last = info.get("first"), info.get("last")
            if first is None:
                continue
            prev = self._last_key[name]
            if prev is not None and _key_lt(tuple(first), prev):
                self._unsorted.add(name)
            self._last_key[name] = tuple(last)

    # -- commit ----------------------------------------------------------------------------

    def commit(self, meta: Mapping[str, Any] | None = None) -> dict:
        """Check invariants over the staged files, then switch the source in. Returns its entry."""
        assert self.staging is not None, "commit() outside the with-block"
        for name in sorted(self._unsorted):
            _resort(self.staging, name, self.bucket_of)
        for name in TABLES:  # every table present, so views never guess a shape
            if not any((self.staging / name).glob("part-*.parquet")):
                write_part(self.staging, name, part_label(0), empty_table(name))
        from .validate import check_staged

        check_staged(self.staging, self.source, scratch=self.root)
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
            **dict(meta or {}),
        }
        manifest["sources"][self.source] = entry
        if old:
            manifest["retired"].append({"dir": old["dir"], "at": time.time(), "source": self.source})
        _write_manifest(self.root, manifest)
        self.committed = entry
        return entry


def _key_lt(a: tuple, b: tuple) -> bool:
    """a < b with None sorting last (as DuckDB's NULLS LAST and Arrow's sort_by do)."""
    for x, y in zip(a, b):
        if x == y:
            continue
        if x is None:
            return False
        if y is None:
            return True
        return x < y
    return False


MERGED_PART_ROWS = 100_000  # rows per part a merge writes (bounded memory, few files)


def _resort(folder: Path, name: str, bucket_of: Callable[[str], str] | None) -> None:
    """Rewrite a table whose parts are out of run order as one sorted sequence of parts.

    Bucketed parts (``write_prepared``) are merged bucket by bucket, reading only that bucket's
    row groups from every part, so memory holds one bucket (plus one output part), never the
    whole table. Parts without buckets (batches that came out of order, such as a re-scoring's
    sets) are sorted together by DuckDB, which spills past SORT_MEMORY (_sorted_row_groups).
    """
    parts = sorted((folder / name).glob("part-*.parquet"))
    keys = [(k, "ascending") for k in SORT_KEYS[name]]
    bucketed = [p for p in parts if p.stem.startswith("part-" + part_label(0, BUCKETED)[:-6])]
    plain = [p for p in parts if p not in bucketed]
    pending: list[pa.Table] = []
    seq = 0

    def flush(force: bool = False) -> None:
        nonlocal pending, seq
        rows = sum(t.num_rows for t in pending)
        if pending and (force or rows >= MERGED_PART_ROWS):
            write_part(folder, name, f"s{seq:06d}", pa.concat_tables(pending))
            seq += 1
            pending = []

    if plain:
        for piece in _sorted_row_groups(folder, plain, SORT_KEYS[name]):
            pending.append(conform(name, piece))
            flush()
        flush(force=True)
    if bucketed:
        assert bucket_of is not None, "bucketed parts need the plan's bucket_of to be merged"
        # Which row groups of which part hold each bucket. The footers are not kept open: 128
        # parts x 104 row groups of steps held 300 MB of metadata at a million rooms; each
        # bucket reopens its parts instead (about 2.5 ms a footer).
        groups: dict[str, dict[Path, list[int]]] = {}
        for path in bucketed:
            f = pq.ParquetFile(path)
            try:
                column = f.schema_arrow.get_field_index("run_id")
                for g in range(f.metadata.num_row_groups):
                    low = f.metadata.row_group(g).column(column).statistics.min
                    groups.setdefault(bucket_of(low if low is not None else "~"), {}).setdefault(path, []).append(g)
            finally:
                f.close()
        for bucket in sorted(groups):
            pieces = [_read_row_groups(path, row_groups) for path, row_groups in groups[bucket].items()]
            table = pa.concat_tables(pieces, promote_options="default").replace_schema_metadata(None)
            pending.append(conform(name, table).sort_by(keys))
            del pieces, table
            flush()
            # Give freed buffers back to the system between buckets, so the process holds about
            # one bucket rather than the allocator's high-water mark (the million-room figure in
            # bench/README.md was measured with this).
            pa.default_memory_pool().release_unused()
        flush(force=True)
    for p in parts:
        p.unlink()
    pa.default_memory_pool().release_unused()


def _read_row_groups(path: Path, row_groups: list[int]) -> pa.Table:
    f = pq.ParquetFile(path)
    try:
        return f.read_row_groups(row_groups)
    finally:
        f.close()


SORT_MEMORY = "512MB"  # DuckDB's budget for sorting parts that came out of order; it spills past it


def _sorted_row_groups(folder: Path, parts: list[Path], keys: tuple[str, ...]) -> Iterator[pa.Table]:
    """The rows of ``parts`` sorted on ``keys`` (nulls last, as Arrow's sort_by), a row group at a time.

    DuckDB sorts them into one scratch file, spilling to disk past SORT_MEMORY, so a source of
    any size (a re-scoring of several sets over a million runs: tens of millions of rows, more
    string data than one Arrow array can hold) is sorted in bounded memory.
    """
    import duckdb

    scratch = folder / f"{TMP_PREFIX}sort-{uuid.uuid4().hex[:8]}"
    scratch.mkdir()
    try:
        sorted_file = scratch / "sorted.parquet"
        con = duckdb.connect()
        try:
            con.execute(f"SET memory_limit = '{SORT_MEMORY}'")
            con.execute("SET temp_directory = $1", [str(scratch)])
            order = ", ".join(f'"{k}" ASC NULLS LAST' for k in keys)
            target = str(sorted_file).replace("'", "''")  # COPY TO takes no bound parameter
            con.execute(f"COPY (SELECT * FROM read_parquet($files, union_by_name = true) ORDER BY {order}) "
                        f"TO '{target}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 65536)",
                        {"files": [str(p) for p in parts]})
        finally:
            con.close()
        reader = pq.ParquetFile(sorted_file)
        try:
            for group in range(reader.metadata.num_row_groups):
                yield reader.read_row_group(group).replace_schema_metadata(None)
        finally:
            reader.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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
    with SourceWriter(root, source, wait=wait, notify=notify) as writer:
        writer.append(tables)
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
