"""Parquet parts of a staging folder: written batch by batch, merged into run order at commit.

Every table is written sorted by run (``schema.SORT_KEYS``) in small row groups, with the sort
recorded in each file's Parquet metadata, so fetching one run reads one or two row groups
(min/max statistics prune the rest). Batches that arrive out of run order (a chunked ingest
whose workers take every n-th room, a re-scoring appending set after set) are merged at commit
by :func:`resort`, in bounded memory.
"""
from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .duck import connect as duck_connect
from .schema import SORT_KEYS, sort_order, sort_order_sql
from .store_batches import conform

# Rows per row group: small for the tables one run is fetched from (a run is a few to a few
# hundred steps), Parquet's default elsewhere.
ROW_GROUP_ROWS: dict[str, int] = {"steps": 8192, "edges": 16384, "predictions": 16384, "runs": 16384}
SORT_SCRATCH_PREFIX = ".tmp-sort-"  # DuckDB's spill folder inside the staging folder, while it sorts
MERGED_PART_ROWS = 100_000  # rows per part a merge writes (bounded memory, few files)
SORT_MEMORY = "512MB"  # DuckDB's budget for sorting parts that came out of order; it spills past it
BUCKETED = "b"  # the label prefix of parts written by bucket (merged at commit)
# Serialized footers a merge keeps parsed (about seven times this in memory): a million
# simulated rooms come in 128 parts whose steps footers are about 400 KB each.
FOOTER_BYTES = 64 << 20


def table_parts(source_folder: str | Path, table: str) -> list[Path]:
    """The Parquet parts of one table of a source (or of a staged write), in part order: the one
    place that knows how a part is named on disk."""
    return sorted((Path(source_folder) / table).glob("part-*.parquet"))


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
    """Write a prepared batch as parts numbered ``seq``; returns per table its rows and key range
    (and, for ``runs``, the corpora of its runs: the manifest records them per source).

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
            written[name] = {"rows": table.num_rows, "first": part_key(table, name, 0),
                             "last": part_key(table, name, -1)}
        else:
            _write_bucketed(Path(folder) / name / f"part-{part_label(seq, BUCKETED)}.parquet", name, table, bucket_of)
            written[name] = {"rows": table.num_rows, "bucketed": True}
        if name == "runs":
            written[name]["corpora"] = table_corpora(table.column("corpus"))
    return written


def _write_bucketed(path: Path, name: str, table: pa.Table, bucket_of: Callable[[str], str]) -> None:
    """``table`` (prepared: sorted by its keys) as one part whose row groups never straddle a
    bucket."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run_ids = table.column("run_id").to_pylist()
    cuts = [0] + [i for i in range(1, len(run_ids)) if run_ids[i] != run_ids[i - 1]
                  and bucket_of(run_ids[i] or "~") != bucket_of(run_ids[i - 1] or "~")] + [len(run_ids)]
    # A bucketed part lives until its commit's merge reads it once: LZ4 without dictionaries
    # writes a chunk of steps in about half zstd's time (117 against 261 ms for 72,000 steps)
    # and reads back faster, for half again the size on disk.
    with pq.ParquetWriter(path, table.schema, compression="lz4", use_dictionary=False) as writer:
        for lo, hi in zip(cuts, cuts[1:]):
            writer.write_table(table.slice(lo, hi - lo), row_group_size=ROW_GROUP_ROWS.get(name, 65536))


def table_corpora(column: pa.ChunkedArray | pa.Array) -> list[str]:
    """The corpora a ``corpus`` column names, sorted (the manifest records them per source)."""
    return sorted(c for c in pc.unique(column).to_pylist() if c is not None)


def link_part(part: Path, target: Path) -> None:
    """A committed part into a staging folder: hard-linked (a committed part never changes)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(part, target)
    except OSError:  # a file system without hard links: a copy does the same
        shutil.copyfile(part, target)


def part_key(table: pa.Table, name: str, i: int) -> list | None:
    """Row ``i``'s sort key (``schema.SORT_KEYS``), or None for a table kept unsorted."""
    keys = SORT_KEYS.get(name)
    return [table.column(k)[i].as_py() for k in keys] if keys else None


def key_lt(a: tuple, b: tuple) -> bool:
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


def resort(folder: Path, name: str, bucket_of: Callable[[str], str] | None) -> None:
    """Rewrite a table whose parts are out of run order as one sorted sequence of parts.

    Bucketed parts (``write_prepared``) are merged bucket by bucket, reading only that bucket's
    row groups from every part, so memory holds one bucket (plus one output part), never the
    whole table. Parts without buckets (batches that came out of order, such as a re-scoring's
    sets) are sorted together by DuckDB, which spills past SORT_MEMORY (_sorted_row_groups).
    """
    parts = table_parts(folder, name)
    bucketed = [p for p in parts if p.stem.startswith("part-" + part_label(0, BUCKETED)[:-6])]
    plain = [p for p in parts if p not in bucketed]
    with _MergedParts(folder, name) as merged:
        _merge(folder, name, plain, bucketed, bucket_of, merged)
    for p in parts:
        p.unlink()
    pa.default_memory_pool().release_unused()


class _MergedParts:
    """The merged parts of one table, written in order, MERGED_PART_ROWS rows at a time.

    Each part is written on a thread of its own while the merge reads on (Parquet's encoding and
    compression and the reads release the GIL): a million rooms' steps merged in about a third
    less time. At most one part is being written, so memory holds one part more than a
    merge in one thread.
    """

    def __init__(self, folder: Path, name: str) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.folder, self.name = folder, name
        self.pending: list[pa.Table] = []
        self.seq = 0
        self.writing = None
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="merged-part")

    def __enter__(self) -> _MergedParts:
        return self

    def __exit__(self, kind, *exc) -> None:
        try:
            if kind is None:
                self.flush(force=True)
                self._wait()
        finally:
            self.pool.shutdown(wait=True)

    def add(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.flush()

    def flush(self, force: bool = False) -> None:
        rows = sum(t.num_rows for t in self.pending)
        if self.pending and (force or rows >= MERGED_PART_ROWS):
            table = pa.concat_tables(self.pending)
            self.pending = []
            self._wait()
            self.writing = self.pool.submit(write_part, self.folder, self.name, f"s{self.seq:06d}", table)
            self.seq += 1

    def _wait(self) -> None:
        if self.writing is not None:
            writing, self.writing = self.writing, None
            writing.result()  # a failed write raises here, in the merge


def _merge(folder: Path, name: str, plain: list[Path], bucketed: list[Path],
           bucket_of: Callable[[str], str] | None, merged: _MergedParts) -> None:
    keys = sort_order(name)
    if plain:
        for piece in _sorted_row_groups(folder, plain, SORT_KEYS[name]):
            merged.add(conform(name, piece))
        merged.flush(force=True)
    if bucketed:
        assert bucket_of is not None, "bucketed parts need the plan's bucket_of to be merged"
        # Which row groups of which part hold each bucket, and how many rows. Every read opens
        # every part again, so each part's parsed footer is kept for the table's merge, up to
        # FOOTER_BYTES of them: parsing one (a row group per bucket) and freeing it again cost
        # more than reading the bucket's rows (about 3 against 1.3 ms a read). Past the budget
        # a part's footer is parsed at each read, so memory stays bounded whatever the parts.
        groups: dict[str, dict[Path, list[int]]] = {}
        rows_in: dict[str, int] = {}
        footers: dict[Path, pq.FileMetaData] = {}
        kept_bytes = 0
        for path in bucketed:
            f = pq.ParquetFile(path)
            try:
                column = f.schema_arrow.get_field_index("run_id")
                for g in range(f.metadata.num_row_groups):
                    group = f.metadata.row_group(g)
                    low = group.column(column).statistics.min
                    bucket = bucket_of(low if low is not None else "~")
                    groups.setdefault(bucket, {}).setdefault(path, []).append(g)
                    rows_in[bucket] = rows_in.get(bucket, 0) + group.num_rows
                if kept_bytes + f.metadata.serialized_size <= FOOTER_BYTES:
                    footers[path] = f.metadata
                    kept_bytes += f.metadata.serialized_size
            finally:
                f.close()
        # Consecutive buckets are read together up to a merged part's rows: a small write (one
        # chunk, a bucket per run folder) opens each part once, not once per bucket, and a
        # large one still holds about one part's rows (or one bucket, when a bucket is larger).
        for batch in _batches(sorted(groups), rows_in, MERGED_PART_ROWS):
            reads: dict[Path, list[int]] = {}
            for bucket in batch:
                for path, row_groups in groups[bucket].items():
                    reads.setdefault(path, []).extend(row_groups)
            pieces = [_read_row_groups(path, sorted(row_groups), footers.get(path)) for path, row_groups in reads.items()]
            table = pa.concat_tables(pieces, promote_options="default").replace_schema_metadata(None)
            # A bucket's rows usually come in order already (each part is sorted and a chunk
            # holds later rooms of a run folder than the chunk before): the check costs a few
            # milliseconds where the sort's gather of the text columns cost a tenth of a second.
            table = conform(name, table)
            merged.add(table if in_order(table, SORT_KEYS[name]) else table.sort_by(keys))
            del pieces, table
            # Give freed buffers back to the system between reads, so the process holds about
            # one read rather than the allocator's high-water mark (the million-room figure in
            # bench/README.md was measured with this).
            pa.default_memory_pool().release_unused()


def in_order(table: pa.Table, keys: tuple[str, ...]) -> bool:
    """Whether ``table``'s rows are in ascending order on ``keys``, nulls last (as ``sort_by``
    and DuckDB's NULLS LAST order them); a NaN key reads as out of order."""
    n = table.num_rows
    if n < 2:
        return True
    ordered = None  # each adjacent pair in order on the keys after the current one
    for key in reversed(keys):
        column = table.column(key)
        a, b = column.slice(0, n - 1), column.slice(1)
        a_null, b_null = pc.is_null(a), pc.is_null(b)
        before = pc.or_(pc.fill_null(pc.less(a, b), False), pc.and_(b_null, pc.invert(a_null)))
        same = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(a_null, b_null))
        ordered = pc.or_(before, same if ordered is None else pc.and_(same, ordered))
    return bool(pc.all(ordered).as_py())


def _batches(buckets: list[str], rows_in: Mapping[str, int], limit: int) -> Iterator[list[str]]:
    """``buckets`` in order, cut into runs of consecutive buckets of at most ``limit`` rows
    (a bucket larger than ``limit`` alone)."""
    batch: list[str] = []
    rows = 0
    for bucket in buckets:
        if batch and rows + rows_in[bucket] > limit:
            yield batch
            batch, rows = [], 0
        batch.append(bucket)
        rows += rows_in[bucket]
    if batch:
        yield batch


def _read_row_groups(path: Path, row_groups: list[int], footer: pq.FileMetaData | None = None) -> pa.Table:
    f = pq.ParquetFile(path, metadata=footer)
    try:
        return f.read_row_groups(row_groups)
    finally:
        f.close()


def _sorted_row_groups(folder: Path, parts: list[Path], keys: tuple[str, ...]) -> Iterator[pa.Table]:
    """The rows of ``parts`` sorted on ``keys`` (nulls last, as Arrow's sort_by), a row group at a time.

    DuckDB sorts them into one scratch file, spilling to disk past SORT_MEMORY, so a source of
    any size (a re-scoring of several sets over a million runs: tens of millions of rows, more
    string data than one Arrow array can hold) is sorted in bounded memory.
    """
    scratch = folder / f"{SORT_SCRATCH_PREFIX}{uuid.uuid4().hex[:8]}"
    scratch.mkdir()
    try:
        sorted_file = scratch / "sorted.parquet"
        con = duck_connect()
        try:
            con.execute(f"SET memory_limit = '{SORT_MEMORY}'")
            con.execute("SET temp_directory = $1", [str(scratch)])
            order = sort_order_sql(keys)
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

