"""Streaming, parallel ingest: an adapter's work cut into chunks, each converted and written as
Parquet parts on its own, the source switched in once at the end.

An adapter that can stream offers ``plan(path, context, **options) -> Plan``: the chunks (small,
picklable units such as a list of files), a module-level ``convert`` that turns one chunk into
schema tables, and the tables known up front (the ``corpora`` row). :func:`run_plan` runs the
chunks in order in this process, or on a Dask client (a local cluster of processes, or an
existing cluster by address: ``auditatlas.cluster``), where each worker converts its chunk and
writes the parts into the staging folder itself, so only counts travel back and no process
holds more than a chunk. The rule stays all or nothing: a chunk with a bad file writes nothing,
every problem of every chunk is collected, and one problem anywhere lands nothing.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..arrow_memory import use_system_allocator
from ..errors import IngestFailed, InputError
from ..progress import Progress
from ..store import SourceWriter, prepare, write_prepared


@dataclass
class Chunk:
    """One converted chunk: its tables, the problems found, counters for the summary."""

    tables: dict[str, Any]
    problems: list[InputError] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)


@dataclass
class Plan:
    """What one streaming ingest writes: a source, its chunks in store order, how to convert one."""

    source: str
    chunks: Sequence[Any]
    convert: Callable[[Any], Chunk]  # module-level (a worker imports it by name)
    head: dict[str, Any] = field(default_factory=dict)  # tables known up front
    meta: dict[str, Any] = field(default_factory=dict)
    bucket_of: Callable[[str], str] | None = None  # run id -> sort bucket, when chunks are not in run order
    units: str = "files"  # what a chunk counts, for the progress line
    sizes: Sequence[int] | None = None  # units per chunk (default: len(chunk))
    notes: Callable[[dict[str, int]], list[str]] | None = None  # summary lines from summed counters
    check: Callable[[Path], None] | None = None  # the staged source, before it lands (SourceWriter.commit)


@dataclass
class Outcome:
    entry: dict
    counters: dict[str, int]
    notes: list[str]
    seconds: float


def convert_and_write(convert: Callable[[Any], Chunk], unit: Any, staging: str, seq: int,
                      bucket_of: Callable[[str], str] | None) -> tuple[dict, list[InputError], dict]:
    """Worker side: convert one chunk and, when it is clean, write its parts. Returns counts only."""
    use_system_allocator()
    chunk = convert(unit)
    if chunk.problems:
        return {}, chunk.problems, chunk.counters
    chunk_counters = chunk.counters
    written = write_prepared(staging, prepare(chunk.tables), seq, bucket_of)
    del chunk
    # Arrow's allocator keeps freed chunk buffers for reuse; hand them back so a worker holds
    # one chunk at a time, not the high-water mark of its largest one.
    pa.default_memory_pool().release_unused()
    return written, [], chunk_counters


# A plan with at least this many chunks runs on a local cluster unless told otherwise: below
# it, starting worker processes costs more than it saves.
AUTO_PARALLEL_CHUNKS = 4


def run_plan(plan: Plan, store: str | Path, *, client: Any = None, scheduler: str | None = None,
             workers: int | None = None, progress: Progress | None = None, wait: bool = True,
             notify: Callable[[str], None] | None = None) -> Outcome:
    """Convert every chunk of ``plan`` and switch its source in, atomically (all or nothing).

    Where the chunks run: on ``client`` when given; else on the Dask cluster at ``scheduler``;
    else in this process when ``workers == 0`` or the plan is small; else on a local cluster of
    ``workers`` processes (default: one per core).
    """
    use_system_allocator()
    own_cluster = client is None and bool(
        scheduler or workers or (workers is None and len(plan.chunks) >= AUTO_PARALLEL_CHUNKS))
    if own_cluster:
        from ..cluster import DEFAULT_WORKERS, get_client

        client = get_client(scheduler, n_workers=workers or DEFAULT_WORKERS)
    try:
        return _run(plan, store, client, progress, wait, notify, close=client.close if own_cluster else None)
    finally:
        if own_cluster:
            client.close()


def _run(plan: Plan, store: str | Path, client: Any, progress: Progress | None, wait: bool,
         notify: Callable[[str], None] | None, close: Callable[[], None] | None) -> Outcome:
    """``run_plan`` once the client is chosen; ``close`` releases a cluster made for this plan
    as soon as the last chunk is in, so its workers' memory is gone before the merge."""
    began = time.perf_counter()
    sizes = list(plan.sizes) if plan.sizes is not None else [_size(c) for c in plan.chunks]
    total = sum(sizes)
    with SourceWriter(store, plan.source, wait=wait, notify=notify) as writer:
        if plan.head:
            writer.append(plan.head)
        staging = str(writer.staging)
        writer.bucket_of = plan.bucket_of
        first_seq = writer.next_seq()
        for _ in range(len(plan.chunks) - 1):
            writer.next_seq()
        problems: list[InputError] = []
        counters: dict[str, int] = {}
        done = 0
        for index, (written, found, counts) in _results(plan, staging, first_seq, client):
            problems.extend(found)
            for key, value in counts.items():
                counters[key] = counters.get(key, 0) + int(value)
            if not found:
                writer.record(written)
            done += sizes[index]
            if progress:
                info = {"done": done, "total": total, "units": plan.units, "steps": counters.get("steps", 0),
                        "elapsed": time.perf_counter() - began, "problems": len(problems)}
                progress(done / total if total else 1.0, format_progress(info))
        if close is not None:
            close()
        if problems:
            raise IngestFailed(problems)
        entry = writer.commit({**plan.meta, **{k: v for k, v in counters.items() if k in ("runs", "steps", "files")}},
                              check=plan.check)
    notes = plan.notes(counters) if plan.notes else []
    return Outcome(entry, counters, notes, time.perf_counter() - began)


def _results(plan: Plan, staging: str, first_seq: int, client: Any) -> Iterable[tuple[int, tuple]]:
    """``(chunk index, worker result)`` in chunk order, so records (and progress) stay ordered."""
    if client is None or len(plan.chunks) < 2:
        for index, unit in enumerate(plan.chunks):
            yield index, convert_and_write(plan.convert, unit, staging, first_seq + index, plan.bucket_of)
        return
    from distributed import as_completed

    # Bounded in flight: a few chunks per worker, so the scheduler never holds a million units.
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    window = 3 * n_workers
    pending: dict[Any, int] = {}
    ready: dict[int, tuple] = {}
    next_to_submit = next_to_yield = 0
    queue = as_completed()

    def submit(index: int) -> None:
        future = client.submit(convert_and_write, plan.convert, plan.chunks[index], staging, first_seq + index,
                               plan.bucket_of, pure=False)
        pending[future] = index
        queue.add(future)

    try:
        while next_to_submit < len(plan.chunks) and next_to_submit < window:
            submit(next_to_submit)
            next_to_submit += 1
        for future in queue:
            index = pending.pop(future)
            ready[index] = future.result()
            future.release()
            if next_to_submit < len(plan.chunks):
                submit(next_to_submit)
                next_to_submit += 1
            while next_to_yield in ready:
                yield next_to_yield, ready.pop(next_to_yield)
                next_to_yield += 1
    finally:
        for future in list(pending):
            future.cancel()


def _size(chunk: Any) -> int:
    try:
        return len(chunk)
    except TypeError:
        return 1


def format_progress(info: dict) -> str:
    """What a chunk's progress says: units and steps done, steps per second, time left (the share
    done travels beside it, for whoever draws the progress to show)."""
    done, total, elapsed = info["done"], info["total"], max(info["elapsed"], 1e-9)
    rate = info["steps"] / elapsed
    left = (total - done) * elapsed / done if done else float("nan")
    left_text = f"{left:,.0f} s left" if done else "estimating"
    return (f"{done:,}/{total:,} {info['units']}, {info['steps']:,} steps, "
            f"{rate:,.0f} steps/s, {left_text}" + (f", {info['problems']} problem(s)" if info["problems"] else ""))
