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
