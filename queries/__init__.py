"""The DuckDB side of Audit Atlas: one connection factory and the named queries.

All SQL lives in this package (``queries/sql/*.sql`` and the view definitions below). Callers
ask for a query by name and pass parameters; values are always bound, never formatted in.

Concurrency: one in-memory DuckDB database per store, shared by every Streamlit session, and a
fresh cursor per call (DuckDB connections are not safe to share across threads; cursors of one
database are). Views over the Parquet files are rebuilt whenever the store manifest changes, so
an ingest or a re-score shows up without a restart.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import duckdb
import pyarrow as pa

from auditatlas.schema import TABLES
from auditatlas.store import MANIFEST, read_manifest, store_dir, table_files

SQL_DIR = Path(__file__).resolve().parent / "sql"

# The columns of the slice every page shares, and the run column each one filters.
SLICE_COLUMNS: tuple[str, ...] = ("corpus", "backbone", "difficulty", "temperature", "domain", "outcome")


class _Database:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.con = duckdb.connect(":memory:")
        # The store's files never change in place (a write makes a new folder), so their
        # footers can be cached: a query over hundreds of parts then skips re-reading them.
        # GLOBAL: a plain SET is per connection, and every query runs on a cursor (its own
        # connection), which then re-read every footer (about 2x on a small query at 1M rooms).
        self.con.execute("SET GLOBAL parquet_metadata_cache = true")
        self.lock = threading.Lock()
        self.stamp: float | None = None
        self.local = threading.local()
        # The derived tables (DERIVED) kept as tables for this store version; reset whenever
        # the views are rebuilt.
        self.ready: set[str] = set()
        self.materialisations = 0

    def _manifest_stamp(self) -> float:
        try:
            return (self.root / MANIFEST).stat().st_mtime_ns
        except FileNotFoundError:
            return -1.0

    def refresh(self) -> None:
        stamp = self._manifest_stamp()
        if stamp == self.stamp:
            return
        with self.lock:
            if stamp == self.stamp:
                return
            _create_views(self.con, self.root)
            self.ready = set()
            self.stamp = stamp

    def ensure(self, name: str) -> None:
        """Make derived table ``name`` (DERIVED) a table for this store version, on first use;
        over its size cap it stays the live view (same name, same columns)."""
        self.refresh()
        if name in self.ready:
            return
        with self.lock:
            if name in self.ready:
                return
            spec = DERIVED[name]
            if spec.fits(read_manifest(self.root)):
                self.materialisations += 1
                _materialise(self.con, name, f"m{self.materialisations}")
            self.ready.add(name)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        self.refresh()
        return self.con.cursor()

    def thread_cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's own cursor, kept between calls: making one costs about as much as a
        small query (a Streamlit session is one thread, so each session keeps its own)."""
        self.refresh()
        cur = getattr(self.local, "cursor", None)
        if cur is None:
            cur = self.local.cursor = self.con.cursor()
        return cur


_DATABASES: dict[str, _Database] = {}
_DATABASES_LOCK = threading.Lock()


def _database(root: str | Path | None) -> _Database:
    root = Path(store_dir(root)).resolve()
    key = str(root)
    with _DATABASES_LOCK:
        db = _DATABASES.get(key)
        if db is None:
            db = _DATABASES[key] = _Database(root)
    return db


def connect(root: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """A new cursor on the store's views (store_dir() when root is None); the caller closes it."""
    return _database(root).cursor()


def _empty_select(table: str) -> str:
    cols = ", ".join(f"CAST(NULL AS {_duck_type(f.type)}) AS {f.name}" for f in TABLES[table])
    return f"SELECT {cols} WHERE false"


def _duck_type(t: pa.DataType) -> str:
    if pa.types.is_string(t):
        return "VARCHAR"
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_list(t):
        return _duck_type(t.value_type) + "[]"
    raise TypeError(f"no DuckDB type for {t}")


def _create_views(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    manifest = read_manifest(root)
    for table in TABLES:
        files = table_files(root, table, manifest)
        physical = "predictions_stored" if table == "predictions" else table
        if files:
            # File paths come from our own manifest, not from users; quoting guards odd folders.
            listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            # Every part is written in the one schema (store.conform), so no union by name:
            # it makes DuckDB reconcile the schemas of every file on every scan.
            select = f"SELECT * FROM read_parquet([{listing}])"
        else:
            select = _empty_select(table)
        con.execute(f"CREATE OR REPLACE VIEW {physical} AS {select}")
    # Released rankings are resolved to per-step scores once per store version (a small table:
    # one row per judged step), not in a view every query recomputes.
    con.execute(f"CREATE OR REPLACE TABLE predictions_resolved AS {_sql('resolve_rankings')}")
    con.execute(f"CREATE OR REPLACE VIEW predictions AS {_sql('view_predictions')}")
    # Derived tables start as live views; _Database.ensure swaps in a table on first use.
    for name in DERIVED:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {_sql(name)}")
    _drop_materialised(con)


@dataclass(frozen=True)
class Derived:
    """A derived table the query layer keeps in memory per store version (queries/sql/NAME.sql).

    ``trigger``: text of a query that reads it (the run() check); ``enums``: text columns kept
    as ENUMs; ``cap``: the manifest row count (``table``) above which it stays a live view, so
    memory never grows with the corpus.
    """

    trigger: str
    enums: tuple[str, ...]
    table: str
    cap: int

    def fits(self, manifest: Mapping[str, Any]) -> bool:
        rows = sum(int((src.get("rows") or {}).get(self.table) or 0) for src in manifest.get("sources", {}).values())
        return rows <= self.cap


DERIVED: dict[str, Derived] = {
    # Every scored, labeled test step of every step-level set, joined once to its step: what the
    # detector views rank. As ENUMs about 40 bytes a row (plain strings: about 290); 20M stored
    # predictions (20% test) would be about 160 MB.
    "test_scores": Derived("FROM sliced_test_scores",
                           ("set_id", "corpus", "run_id", "action", "backbone", "difficulty", "domain", "outcome"),
                           table="predictions", cap=20_000_000),
}


def _materialise(con: duckdb.DuckDBPyConnection, name: str, tag: str) -> None:
    """Derived table ``name`` as table ``{tag}_{name}``; its view then reads the table."""
    spec, table = DERIVED[name], f"{tag}_{name}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table}_build AS SELECT * FROM ({_sql(name)})")
    for col in spec.enums:
        con.execute(f"CREATE TYPE {table}_{col} AS ENUM "
                    f"(SELECT DISTINCT {col} FROM {table}_build WHERE {col} IS NOT NULL ORDER BY 1)")
    cols = ", ".join(f"CAST({c} AS {table}_{c}) AS {c}" if c in spec.enums else c
                     for c in (d[0] for d in con.execute(f"SELECT * FROM {table}_build LIMIT 0").description))
    con.execute(f"CREATE TABLE {table} AS SELECT {cols} FROM {table}_build")
    con.execute(f"DROP TABLE {table}_build")
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {table}")
    _drop_materialised(con, only=name, keep=table)


def _drop_materialised(con: duckdb.DuckDBPyConnection, only: str | None = None, keep: str | None = None) -> None:
    """Drop the derived tables (of ``only``, else all) and their ENUM types, except ``keep``:
    what earlier store versions left."""
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
        name = next((n for n in DERIVED if table.endswith("_" + n) and re.fullmatch(r"m\d+", table[: -len(n) - 1])), None)
        if name is None or table == keep or (only is not None and name != only):
            continue
        con.execute(f"DROP TABLE IF EXISTS {table}")
        for col in DERIVED[name].enums:
            con.execute(f"DROP TYPE IF EXISTS {table}_{col}")


@lru_cache(maxsize=None)
def _raw(name: str) -> str:
    path = SQL_DIR / f"{name}.sql"
    if not path.exists():
        raise KeyError(f"no named query '{name}' in {SQL_DIR}")
    return path.read_text()


@lru_cache(maxsize=None)
def _sql(name: str, active: tuple[str, ...] = ()) -> str:
    """The text of query ``name``; ``@slice`` becomes the slice CTEs for the ``active`` columns.

    Only the filtered columns get a predicate, written ``col = ANY($col)``: DuckDB pushes that
    into the Parquet scan (row-group pruning on the sorted, dictionary-encoded keys), while a
    catch-all ``len($col) = 0 OR list_contains($col, col)`` is evaluated row by row even when
    the list is empty (about 4x slower on a 100,000-room store). The text is built from our
    own column names only; the values are always bound.
    """
    text = _raw(name)
    # ``@in_slice(x.run_id)``: the run is in the slice. With no filter that is every run, and
    # the text says ``true``: DuckDB does not fold ``run_id IN (all runs)`` away, and the
    # semi-join over every run costs about 100 ms of CPU on a 100,000-room store.
    text = _IN_SLICE.sub(lambda m: f"{m.group(1)} IN (SELECT run_id FROM sliced_runs)" if active else "true", text)
    if "@slice" in text:
        text = text.replace("@slice", _slice_ctes(active))
    # ``@name`` (other than @slice) includes the shared fragment sql/_name.sql, so a predicate
    # several queries apply (the run list's filters) is written once.
    return _FRAGMENT.sub(lambda m: _raw("_" + m.group(1)).strip(), text)


_FRAGMENT = re.compile(r"@([a-z][a-z_]*)")
_IN_SLICE = re.compile(r"@in_slice\(([a-z_][a-z_0-9]*\.run_id)\)")


def _slice_ctes(active: tuple[str, ...]) -> str:
    """``active`` names the filtered columns; a name ending in ``=`` is bound to one value."""
    def predicate(alias: str, col: str) -> str:
        if col.endswith("="):
            return f"{alias}.{col[:-1]} = ${col[:-1]}"
        return f"{alias}.{col} = ANY(${col})"

    def where(alias: str) -> str:
        return " AND ".join(predicate(alias, col) for col in active) or "true"

    # A CTE no query reads costs nothing: DuckDB plans only the ones referenced.
    return (f"sliced_runs AS (SELECT * FROM runs r WHERE {where('r')}),\n"
            f"sliced_steps AS (SELECT * FROM steps s WHERE {where('s')}),\n"
            f"sliced_test_scores AS (SELECT * FROM test_scores t WHERE {where('t')})")


def _prepare(name: str, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """SQL text and bound values: a query using the slice binds its filtered columns."""
    bound = dict(params or {})
    if "@slice" not in _raw(name):
        return _sql(name), bound
    chosen = {col: values for col, values in slice_params(bound.pop("slice", None)).items() if values}
    # One value: a scalar equality, which DuckDB turns into a constant filter on the scan.
    active = tuple(col + "=" if len(values) == 1 else col for col, values in chosen.items())
    values = {col: vals[0] if len(vals) == 1 else vals for col, vals in chosen.items()}
    return _sql(name, active), {**values, **bound}


def run(name: str, params: Mapping[str, Any] | None = None, root: str | Path | None = None):
    """Run named query ``name`` with bound ``params``; returns a pandas DataFrame.

    Queries over the shared slice take it as ``params["slice"]`` (see slice_params).
    """
    sql, bound = _prepare(name, params)
    db = _database(root)
    # Every slice query defines the sliced_test_scores CTE; only the detector views read it.
    for derived, spec in DERIVED.items():
        if spec.trigger in sql:
            db.ensure(derived)
    return db.thread_cursor().execute(sql, bound).df()


def slice_params(slice_: Mapping[str, Any] | None) -> dict[str, Any]:
    """Values of the shared slice: every column a list, an empty list meaning 'all'.

    Named queries filter on the non-empty ones with bound ``col = ANY($col)`` predicates (see
    ``_sql``), so the slice never reaches SQL text.
    """
    slice_ = slice_ or {}
    params: dict[str, Any] = {}
    for col in SLICE_COLUMNS:
        values = slice_.get(col) or []
        if col == "temperature":
            params[col] = [float(v) for v in values]
        else:
            params[col] = [str(v) for v in values]
    return params
