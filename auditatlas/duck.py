"""The one way Audit Atlas opens a DuckDB database.

DuckDB draws a progress bar on the process's standard output once a query runs for two
seconds, even when that output is a pipe: it landed in ``auditatlas ... --json`` output, in a
first launch's printed result and in the server log. Every connection here has it off.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A new DuckDB connection (in memory by default) with the progress bar off."""
    import duckdb  # here, not at the top: an ingest worker that never queries need not load it

    return quiet(duckdb.connect(database))


def cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A new cursor of ``con``: a connection of its own, whose settings start at DuckDB's
    defaults (the progress bar is a per-connection setting, never a global one)."""
    return quiet(con.cursor())


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    con.execute("SET enable_progress_bar = false")
    return con
