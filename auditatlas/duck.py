"""The one way Audit Atlas opens a DuckDB database.

DuckDB frees into jemalloc, which on its own gives pages back to the system only when a later
allocation happens to purge them: after a large read the process kept a few hundred MB it no
longer used (at 200,000 rooms, 600-650 MB against 700-785 MB between the LIVE board's prefixes;
``bench/README.md``). jemalloc's background threads purge them as they age; the setting is the
process's, so every connection turns it on. Arrow's buffers (pandas' strings in every result) come
from malloc for the same reason (``arrow_memory``).

DuckDB draws a progress bar on the process's standard output once a query runs for two
seconds, even when that output is a pipe: it landed in ``auditatlas ... --json`` output, in a
first launch's printed result and in the server log. Every connection here has it off.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .arrow_memory import use_system_allocator

if TYPE_CHECKING:
    import duckdb


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A new DuckDB connection (in memory by default) with the progress bar off."""
    import duckdb  # here, not at the top: an ingest worker that never queries need not load it

    use_system_allocator()
    con = quiet(duckdb.connect(database))
    con.execute("SET allocator_background_threads = true")
    return con


def cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A new cursor of ``con``: a connection of its own, whose settings start at DuckDB's
    defaults (the progress bar is a per-connection setting, never a global one)."""
    return quiet(con.cursor())


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute("SET enable_progress_bar = false")
    return con


def bounded(memory_limit: str, spill: str | Path | None) -> duckdb.DuckDBPyConnection:
    """A new database for work that must stay within ``memory_limit``: spilling into ``spill``
    ('' for never; None leaves DuckDB's default), and no insertion order to keep."""
    con = connect()
    con.execute(f"SET memory_limit = '{memory_limit}'")
    if spill is not None:
        con.execute("SET temp_directory = $1", [str(spill)])
    con.execute("SET preserve_insertion_order = false")
    return con


# The process's kept database, for small work (a write's invariant checks, a batch's ranks): a
# new DuckDB database and its first statements cost about 20 ms of CPU, as much as that work
# itself. Its memory is bounded and it never spills (it has no spill folder: DuckDB cannot move
# one once used), so only work far below the bound is given to it; rows come back in no
# particular order (the work sorts what it keeps).
KEPT_MEMORY_LIMIT = "256MB"
# The kept database is replaced by a new one after serving this many cursors. DuckDB keeps a few
# KB of native memory per Parquet file a database has read, closed cursors or not (about 9 KB a
# check reading two new files, measured on the kept database; none on a database closed after
# each check), and a long-lived writer reads new files at every write: the receiver's staged
# parts, named anew each time, grew it about 20 MB per million spans received (bench/README.md).
# Replacing it bounds that at this many cursors' worth for about 20 ms once per this many.
KEPT_MAX_USES = 100

_kept: tuple[int, duckdb.DuckDBPyConnection] | None = None
_kept_uses = 0
_kept_lock = threading.Lock()


def kept_cursor() -> duckdb.DuckDBPyConnection:
    """A new cursor (a connection of its own: its temporary views and registered tables are its
    own) of this process's kept database, made on first use and again after KEPT_MAX_USES cursors."""
    global _kept, _kept_uses
    with _kept_lock:
        if _kept is None or _kept[0] != os.getpid() or _kept_uses >= KEPT_MAX_USES:
            # The replaced database is not closed here: a cursor another thread still works on
            # holds it, and DuckDB frees it with its last cursor.
            _kept, _kept_uses = (os.getpid(), bounded(KEPT_MEMORY_LIMIT, spill="")), 0
        _kept_uses += 1
        return cursor(_kept[1])


def _close_kept_before_fork() -> None:
    """Close the kept database before this process forks: a forked child that then opened a
    DuckDB database of its own hung while its parent's was open (two reviewers' processes in
    tests/test_reviews.py). The parent opens it again on its next use. The lock is held over
    the fork, so the child never inherits it held by a thread that is not there."""
    global _kept
    _kept_lock.acquire()
    kept, _kept = _kept, None
    if kept is not None:
        kept[1].close()


def _after_fork_in_child() -> None:
    global _kept_lock
    _kept_lock = threading.Lock()


os.register_at_fork(before=_close_kept_before_fork, after_in_parent=lambda: _kept_lock.release(),
                    after_in_child=_after_fork_in_child)
