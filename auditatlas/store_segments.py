"""Sorted segments: how a writer adds runs to a large source without sorting it again.

A source written by an ingest holds each table in one run order across all its parts
(``store_parts``). A writer that adds a few runs to a large source at a time (the live
receiver, ``auditatlas receive``) cannot keep that order cheaply: its run ids are
``<corpus>:<trace id>`` (random hex), so the new runs fall between the held ones, and sorting
the whole source again on every write made a write's time and memory grow with the corpus
(bench/README.md, ``bench/receive_writes.py``).

So the tables keyed by run (``SEGMENTED``) of such a source are kept as *segments*, LSM-style:
each segment is a sequence of parts sorted by ``schema.SORT_KEYS`` on its own; a write adds its
runs as a new segment and then merges the newest segments while one is not at least
``MERGE_RATIO`` times larger than all those after it (``merges_due``), so segment sizes fall
geometrically, a source holds O(log n) of them, and each row is re-written O(log n) times over
the source's life instead of at every write. A merge streams a row group of every segment at a
time (``merge``): memory holds a few row groups and one output part, whatever the segments' size.

A run lives in exactly one segment (run ids are unique in a source; a run re-written by a later
write is dropped from its old segment first), which is what lets ``merge`` emit every row up to
the smallest run id buffered without looking further.

Readers need none of this: every query orders what it shows (``ORDER BY``), and fetching one run
prunes row groups by their min/max statistics within each part, so a run costs one or two row
groups per segment. The layout is recorded in the manifest entry (``segments``: rows per segment,
oldest first) for the next writer; parts are named ``part-g<segment>-<n>.parquet``.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import StoreError
from .schema import sort_order
from .store_batches import conform
from .store_parts import table_corpora, table_parts, write_part

# The tables kept in segments: keyed by run first, and never holding a row without a run
# (predictions may: a config's prediction has no run_id; they are written as every source's).
SEGMENTED: tuple[str, ...] = ("runs", "steps", "edges")
# A segment's part holds at most about this many rows: a run dropped from an old segment (a
# re-opened trace) re-writes one part, never a whole segment.
SEGMENT_PART_ROWS = 32_768
# Merge the newest segments while the one before them is less than this many times their
# rows. 3: about 7 re-writes per row over 1,000 writes of equal size and at most 6 segments
# (2: 4.6 re-writes, 9 segments; 4: 9.2 and 5), counted by simulating the rule.
MERGE_RATIO = 3
_FINAL = re.compile(r"^part-g(\d+)-\d+\.parquet$")


def merges_due(rows: Sequence[int], ratio: int = MERGE_RATIO) -> int:
    """How many of the newest segments (``rows``: each segment's rows, oldest first) to merge
    into one: 0, or at least 2. The newest tail grows while the segment before it holds fewer
    than ``ratio`` times the tail's rows, so after a merge every segment holds at least
    ``ratio`` times the rows of all the newer ones."""
    if len(rows) < 2:
        return 0
    k, tail = 1, rows[-1]
    while k < len(rows) and rows[-k - 1] < ratio * tail:
        tail += rows[-k - 1]
        k += 1
    return k if k > 1 else 0


def committed_segments(folder: Path, name: str, recorded: Sequence[int] | None) -> list[list[Path]]:
    """The parts of each segment of table ``name`` in a committed source folder, oldest first.

    ``recorded``: the manifest's rows per segment; without it (a source an ingest wrote, whose
    parts are in one run order) every non-empty part is one segment.
    """
    parts = table_parts(folder, name)
    if recorded is None:
        whole = [p for p in parts if pq.read_metadata(p).num_rows]
        return [whole] if whole else []
    by_segment: list[list[Path]] = [[] for _ in recorded]
    for part in parts:
        found = _FINAL.match(part.name)
        if found and int(found.group(1)) < len(by_segment):
            by_segment[int(found.group(1))].append(part)
    return [segment for segment in by_segment if segment]


def may_hold(part: Path, dropped: Sequence[str]) -> bool:
    """Whether ``part`` may hold a run of ``dropped`` (sorted), by its row groups' run_id
    statistics: only such parts are read, so dropping a run costs a part, not the source."""
    if not dropped:
        return False
    meta = pq.read_metadata(part)
    column = meta.schema.to_arrow_schema().get_field_index("run_id")
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max:
            return True
        i = bisect.bisect_left(dropped, stats.min)
        if i < len(dropped) and dropped[i] <= stats.max:
            return True
    return False


def run_corpora(part: Path) -> set[str]:
    """The corpora of a runs part, from its statistics where a row group holds one corpus."""
    meta = pq.read_metadata(part)
    column = meta.schema.to_arrow_schema().get_field_index("corpus")
    held: set[str] = set()
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max or stats.min != stats.max or stats.null_count:
            return set(table_corpora(pq.read_table(part, columns=["corpus"]).column("corpus")))
        held.add(stats.min)
    return held


class PartSink:
    """Sorted rows written as parts of about SEGMENT_PART_ROWS rows, under labels ``label()``."""

    def __init__(self, folder: Path, name: str, label: Callable[[], str]) -> None:
        self.folder, self.name, self.label = folder, name, label
        self.parts: list[Path] = []
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        while self._pending_rows >= SEGMENT_PART_ROWS:
            whole = pa.concat_tables(self._pending)
            self._write(whole.slice(0, SEGMENT_PART_ROWS))
            rest = whole.slice(SEGMENT_PART_ROWS)
            self._pending, self._pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> list[Path]:
        if self._pending_rows:
            self._write(pa.concat_tables(self._pending))
        self._pending, self._pending_rows = [], 0
        return self.parts

    def _write(self, table: pa.Table) -> None:
        self.parts.append(write_part(self.folder, self.name, self.label(), table))
        self.rows += table.num_rows


def merge(segments: Sequence[Sequence[Path]], name: str, sink: PartSink) -> int:
    """Merge sorted segments of table ``name`` into ``sink`` in one sorted sequence; the rows
    merged. Streams: holds one row group of each segment and the sink's pending part."""
    keys = sort_order(name)
    streams = [_row_groups(parts, name) for parts in segments]
    buffers: list[pa.Table | None] = [next(s, None) for s in streams]
    merged = 0
    while any(b is not None for b in buffers):
        live = [i for i, b in enumerate(buffers) if b is not None]
        # Every row up to the smallest run id any buffer ends with comes before every unread
        # row: each segment is sorted, and a run lives in one segment only.
        bound = min(buffers[i].column("run_id")[-1].as_py() for i in live)
        pieces = []
        for i in live:
            buffer = buffers[i]
            n = pc.sum(pc.less_equal(buffer.column("run_id"), bound)).as_py() or 0
            pieces.append(buffer.slice(0, n))
            buffers[i] = buffer.slice(n) if n < buffer.num_rows else next(streams[i], None)
        piece = pa.concat_tables(pieces).sort_by(keys)
        merged += piece.num_rows
        sink.add(piece)
    sink.close()
    return merged


def _row_groups(parts: Sequence[Path], name: str) -> Iterator[pa.Table]:
    for path in parts:
        with pq.ParquetFile(path) as f:
            for g in range(f.metadata.num_row_groups):
                table = conform(name, f.read_row_group(g).replace_schema_metadata(None))
                if table.column("run_id").null_count:
                    raise StoreError(f"{path}: a row of table '{name}' has no run_id; segments are keyed by run.")
                if table.num_rows:
                    yield table


def finalize(folder: Path, name: str, segments: Sequence[Sequence[Path]]) -> None:
    """Give the staged parts their committed names, ``part-g<segment>-<n>``, oldest first."""
    for i, parts in enumerate(segments):
        for j, part in enumerate(parts):
            part.rename(folder / name / f"part-g{i:03d}-{j:06d}.parquet")
