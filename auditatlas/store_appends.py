"""The one writer of the sources people add to by hand (reviewers' verdicts, authors' tours):
append one part under the store lock, merging the source's parts into one once it holds many.

Each write carries the parts the source holds (hard links: a committed part never changes),
adds its own, and switches the source in with the manifest (``store.SourceWriter``), so the
manifest switch is the commit: a reader sees a whole write or none, a failed or killed write
leaves the store as it was, and two writers at once each carry the other's rows (the lock
orders them). When the source holds ``COMPACT_AT`` parts or more the write merges them into one
(the same rows), so the views never list thousands of files.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import TABLES
from .store import SourceWriter, read_manifest
from .store_parts import table_parts

COMPACT_AT = 64  # parts held before a write merges them into one


@contextmanager
def appending(root: str | Path, source: str, table: str, *, wait: bool = True,
              notify: Callable[[str], None] | None = None,
              compact_at: int | None = None) -> Iterator[tuple[SourceWriter, list[Path]]]:
    """A writer of ``source`` holding what it held (its ``table``'s parts, merged into one when
    there are ``compact_at``, default ``COMPACT_AT``, or more), and the paths of those parts as they were: the caller
    appends its own rows (``writer.append({table: ...})``) and commits."""
    with SourceWriter(root, source, wait=wait, notify=notify) as writer:
        held = held_parts(writer.root, source, table)
        if len(held) >= (COMPACT_AT if compact_at is None else compact_at):
            writer.append({table: pa.concat_tables(read_part(p, table) for p in held)})
        else:
            writer.carry(skip=tuple(t for t in TABLES if t != table))
        yield writer, held


def held_parts(root: str | Path, source: str, table: str) -> list[Path]:
    """The committed parts of ``source``'s ``table``, in part order."""
    entry = read_manifest(root)["sources"].get(source)
    if entry is None:
        return []
    return table_parts(Path(root) / str(entry["dir"]), table)


def read_part(part: Path, table: str, columns: list[str] | None = None) -> pa.Table:
    """One part, in the store's types (some of its columns only, as written, when ``columns``)."""
    data = pq.read_table(part, columns=columns)
    return data if columns else data.cast(TABLES[table])
