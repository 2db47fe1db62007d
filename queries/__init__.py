"""The DuckDB side of Audit Atlas: one connection factory and the named queries.

All SQL lives in this package (``queries/sql/*.sql`` and the view definitions below). Callers
ask for a query by name and pass parameters; values are always bound, never formatted in.

Concurrency: one in-memory DuckDB database per store, shared by every Streamlit session, and a
fresh cursor per call (DuckDB connections are not safe to share across threads; cursors of one
database are). Views over the Parquet files are rebuilt whenever the store manifest changes, so
an ingest or a re-score shows up without a restart.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

import duckdb
import pyarrow as pa

from auditatlas.schema import SLICE_COLUMNS, TABLES
from auditatlas.store import MANIFEST, read_manifest, store_dir, table_files

from . import derived

SQL_DIR = Path(__file__).resolve().parent / "sql"
_log = logging.getLogger(__name__)

# SLICE_COLUMNS (imported above): the columns of the slice every page shares, each filtering
# the run column of its name.


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
        # The derived tables (queries/derived.py) for this store version: None until first
        # use; then the folder their views read, or False when the build failed (the views
        # stay the live queries, and answers stay right, only slower).
        self.derived: Path | bool | None = None
        # Whether every prediction set's test steps are of one corpus (a corpus filter then
        # keeps each set's rank groups whole).
        self.single_corpus_sets = False

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
            self.derived = None
            self.stamp = stamp

    def ensure_derived(self) -> bool:
        """Point the derived views at this store version's files, building them on first use.
        True when the rank columns are there to read."""
        self.refresh()
        if self.derived is None:
            with self.lock:
                if self.derived is None:
                    self.derived = _load_derived(self.con, self.root)
                    self.single_corpus_sets = bool(self.derived) and self.con.execute(
                        "SELECT count(*) = 0 FROM (SELECT set_id FROM test_sets GROUP BY set_id "
                        "HAVING count(DISTINCT corpus) > 1)").fetchone()[0]
        return bool(self.derived)

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


def _create_views(con: duckdb.DuckDBPyConnection, root: Path, manifest: Mapping[str, Any] | None = None) -> None:
    manifest = read_manifest(root) if manifest is None else manifest
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
    # Derived tables start as live views; _Database.ensure_derived points them at their files.
    for name in derived.TABLES:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {_sql(derived.QUERY.get(name, name))}")


def _load_derived(con: duckdb.DuckDBPyConnection, root: Path) -> Path | bool:
    """This store version's derived folder (built now if missing), its views swapped in."""
    try:
        manifest = (root / MANIFEST).read_bytes()
    except FileNotFoundError:
        manifest = b""
    home = derived.cache_root(root)
    key = derived.cache_key(manifest, _sql)
    folder = home / key
    if not derived.is_built(folder):
        try:
            build = duckdb.connect(":memory:")
            try:
                build.execute(f"SET memory_limit = '{derived.BUILD_MEMORY}'")
                build.execute("SET preserve_insertion_order = false")
                # The very manifest the key hashes (a write may land meanwhile).
                _create_views(build, root, json.loads(manifest) if manifest else None)
                derived.build(build, folder, _sql)
            finally:
                build.close()
        except (duckdb.Error, OSError, ValueError) as exc:
            _log.warning("derived tables of %s not built (%s); the detector views read the live queries", root, exc)
            return False
    derived.remove_stale(home, keep=key)
    for name, path in derived.files(folder).items():
        quoted = "'" + str(path).replace("'", "''") + "'"
        if name in derived.SMALL:
            # A few hundred or thousand rows: held in memory, where a scan costs microseconds
            # instead of the file open a Parquet read pays on every query (about 1 ms).
            con.execute(f"CREATE OR REPLACE TABLE {name}_in_memory AS SELECT * FROM read_parquet({quoted})")
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_in_memory")
        else:
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({quoted})")
    return folder


def warm(root: str | Path | None = None) -> bool:
    """Build this store version's derived tables now (the CLI calls it after a write, so the
    first Detectors view after a re-score does not wait for them)."""
    return _database(root).ensure_derived()


# Queries that read a derived table: their first run builds it (once per store version).
_DERIVED_TRIGGERS = ("FROM sliced_test_scores", "FROM sliced_test_sets", "FROM set_counts")


@dataclass(frozen=True)
class Twin:
    """A query's twin over the derived tables (``queries/sql/QUERY.sql``): same columns, same
    rows, far less work. ``keeps_whole``: given the query's parameters, the slice columns a
    filter may touch and leave the twin's stored groups whole (beyond corpus, which splits no
    rank group when every set is of one corpus)."""

    query: str
    keeps_whole: Callable[[Mapping[str, Any]], frozenset[str]]


TWINS: dict[str, Twin] = {
    # Cells per backbone rank within the backbone: a backbone filter keeps them whole.
    "grid_cells": Twin("grid_cells_ranked", lambda p: frozenset({"backbone"}) if p.get("by_backbone") else frozenset()),
    # Runs per backbone add up; steps too.
    "detector_coverage": Twin("detector_coverage_ranked", lambda p: frozenset({"backbone"})),
    # The threshold is over all the set's steps in the slice.
    "detector_overall": Twin("detector_overall_ranked", lambda p: frozenset()),
    "grid_errors": Twin("grid_errors_ranked", lambda p: frozenset()),
    # The cube's rows are slice cells: any slice takes them whole.
    "grid_actions": Twin("grid_actions_cube", lambda p: frozenset(SLICE_COLUMNS)),
    "slice_options": Twin("slice_options_stored", lambda p: frozenset(SLICE_COLUMNS)),
}


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


_FRAGMENT = re.compile(r"@([a-z][a-z_]*)\b(?!\()")
_EACH = re.compile(r"@each\(\$([a-z_][a-z_0-9]*)\)")
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
            f"sliced_test_scores AS (SELECT * FROM test_scores t WHERE {where('t')}),\n"
            # Only the ranked twins read this, and only when the slice filters columns it has.
            f"sliced_test_sets AS (SELECT * FROM test_sets t WHERE {where('t')}),\n"
            f"sliced_step_cube AS (SELECT * FROM step_cube t WHERE {where('t')})")


def _prepare(name: str, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """SQL text and bound values: a query using the slice binds its filtered columns."""
    bound = dict(params or {})
    if "@slice" not in _raw(name):
        return _each(_sql(name), bound)
    chosen = {col: values for col, values in slice_params(bound.pop("slice", None)).items() if values}
    # One value: a scalar equality, which DuckDB turns into a constant filter on the scan.
    active = tuple(col + "=" if len(values) == 1 else col for col, values in chosen.items())
    values = {col: vals[0] if len(vals) == 1 else vals for col, vals in chosen.items()}
    return _each(_sql(name, active), {**values, **bound})


def _each(sql: str, bound: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``@each($xs)`` becomes ``($xs__0, $xs__1, ...)``, each element bound on its own: DuckDB
    prunes row groups on an IN list of values, not on a list parameter. An empty list
    matches nothing."""
    def expand(m: re.Match) -> str:
        values = list(bound.pop(m.group(1)))
        for i, value in enumerate(values):
            bound[f"{m.group(1)}__{i}"] = value
        return "(" + (", ".join(f"${m.group(1)}__{i}" for i in range(len(values))) or "NULL") + ")"

    return _EACH.sub(expand, sql), bound


def run(name: str, params: Mapping[str, Any] | None = None, root: str | Path | None = None):
    """Run named query ``name`` with bound ``params``; returns a pandas DataFrame.

    Queries over the shared slice take it as ``params["slice"]`` (see slice_params).
    """
    db = _database(root)
    sql, bound = _prepare(name, params)
    twin = TWINS.get(name)
    reads_derived = twin is not None or any(trigger in sql for trigger in _DERIVED_TRIGGERS)
    # Built on first use: a query with a twin, or one reading a derived table, needs them.
    if reads_derived and db.ensure_derived() and twin is not None:
        filtered = {col for col, values in slice_params((params or {}).get("slice")).items() if values}
        allowed = twin.keeps_whole(params or {}) | ({"corpus"} if db.single_corpus_sets else set())
        if filtered <= allowed:
            sql, bound = _prepare(twin.query, params)
            # A twin may not need every parameter of its query (the grid's label lists).
            code = re.sub(r"--[^\n]*", "", sql)
            bound = {k: v for k, v in bound.items() if re.search(rf"\${k}\b", code)}
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


def runner(root: str | Path | None = None) -> Callable[..., Any]:
    """``run`` bound to the store at ``root``: the query function analyses take (CLI, tests, bench)."""
    return lambda name, params=None: run(name, params, root=root)
