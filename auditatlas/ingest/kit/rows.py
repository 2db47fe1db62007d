"""Arrow row buffers for an adapter that converts many runs: one tuple per row, a C-level
transpose into Arrow columns every few thousand runs, and a rollback of a run that turned out bad.

One tuple append per row and a transpose is far cheaper than appending to twenty lists per
row, and far cheaper than dicts (no key per value). Python tuples of a few thousand runs cost
far more memory than the same rows as Arrow (a worker converting 7,800 rooms in one go peaked
at 530 MB), hence the flushes. A flush only ever happens between runs, so a rollback never
reaches rows already converted.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa

from ...schema import TABLES


class RowBuffer:
    """Row tuples for one schema table (``columns`` in tuple order), flushed into Arrow parts."""

    def __init__(self, table: str, columns: tuple[str, ...]) -> None:
        self.names = columns
        self.table = table
        self.rows: list[tuple] = []
        self.append = self.rows.append
        self.parts: list[pa.Table] = []
        self.flushed = 0

    def __len__(self) -> int:
        return self.flushed + len(self.rows)

    def rollback(self, mark: int) -> None:
        del self.rows[mark - self.flushed:]

    def count_null(self, name: str) -> int:
        """Buffered (not yet flushed) rows whose column ``name`` is None."""
        i = self.names.index(name)
        return sum(1 for row in self.rows if row[i] is None)

    def flush(self) -> None:
        if self.rows:
            self.parts.append(self._arrow())
            self.flushed += len(self.rows)
            self.rows.clear()  # the same list: ``append`` stays bound to it

    def to_arrow(self) -> pa.Table:
        self.flush()
        return pa.concat_tables(self.parts) if self.parts else self._arrow()

    def _arrow(self) -> pa.Table:
        schema = TABLES[self.table]
        columns = list(zip(*self.rows)) if self.rows else [()] * len(self.names)
        return pa.table({name: pa.array(col, type=schema.field(name).type) for name, col in zip(self.names, columns)})


class RunBuffers:
    """The buffers of one chunk, one per table, kept run by run.

    ``mark``/``rollback`` undo one run's rows in every table; ``run_done`` flushes every
    buffer once ``flush_runs`` runs are waiting. ``on_flush`` (a subclass hook) sees the rows
    just before they become Arrow, for counters over rows.
    """

    def __init__(self, columns: dict[str, tuple[str, ...]], flush_runs: int, runs: str = "runs") -> None:
        self.tables = {name: RowBuffer(name, cols) for name, cols in columns.items()}
        self.flush_runs = flush_runs
        self._runs = self.tables[runs]

    def mark(self) -> tuple[int, ...]:
        return tuple(len(buffer) for buffer in self.tables.values())

    def rollback(self, marks: tuple[int, ...]) -> None:
        for buffer, mark in zip(self.tables.values(), marks):
            buffer.rollback(mark)

    def run_done(self) -> None:
        """Between two runs: convert the buffered rows when there are enough of them."""
        if len(self._runs.rows) >= self.flush_runs:
            self.flush()

    def on_flush(self) -> None:
        """Called with the rows still buffered, right before a flush."""

    def flush(self) -> None:
        self.on_flush()
        for buffer in self.tables.values():
            buffer.flush()

    def to_arrow(self) -> dict[str, pa.Table]:
        self.flush()
        return {name: buffer.to_arrow() for name, buffer in self.tables.items()}


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while a chunk is converted.

    A chunk allocates a few hundred thousand dicts, lists and tuples that all stay alive until
    the chunk is written, and none form cycles; every collection the allocations trigger walks
    the growing row buffers for nothing (10-15% of a chunk's time). Reference counting still
    frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
