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
order is ``auditatlas.store_segments`` (``SourceWriter.carry_segments``). The manifest
(``store_manifest``), the writer lock and recovery (``store_lock``) and the store's health
(``store_health``) are modules of their own; this module is the writer, and re-exports the names
adapters, workers and tests use (``read_manifest``, ``health``, ``store_lock``, ``conform``,
``prepare``, ``write_part``, ``write_prepared``, ``ROW_GROUP_ROWS``).

A *source* is an ingest unit (``whowhen``, ``catchbench``, ``demo``...), not a corpus: one
source may bring rows of several corpora (the CatchBench release brings the PRE configs and the
Who&When judge predictions), and every row carries its own ``corpus``.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import store_segments as segs
from .errors import StoreError
from .schema import SORT_KEYS, TABLES, empty_table
from .store_batches import TableLike, conform, prepare  # noqa: F401 - re-exported
from .store_health import health, source_problem  # noqa: F401 - the store's names, where callers find them
from .store_lock import RETIRE_GRACE_S, lock_holder, recover, store_lock  # noqa: F401
from .store_manifest import (  # noqa: F401 - the manifest's names, where callers have always found them
    _SOURCE_NAME,
    DEFAULT_STORE,
    DERIVED_DIR,
    FORMAT,
    LOCK,
    LOCK_HOLDER,
    MANIFEST,
    REVIEWS_SOURCE,
    STAGING_PREFIX,
    TMP_PREFIX,
    TOURS_SOURCE,
    Notify,
    StagedCheck,
    data_manifest,
    is_empty,
    manifest_bytes,
    read_manifest,
    side_sources,
    source_corpora,
    source_run_ids,
    store_dir,
    table_files,
    write_manifest,
)
from .store_manifest import write_manifest as _write_manifest
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
