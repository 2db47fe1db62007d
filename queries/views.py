"""One store version as DuckDB views: the store's Parquet files, then its derived tables.

Every statement here runs on a connection whose current schema is the version's own
(``queries/database.py``), so the views a query reads always belong to one version.

- :func:`bind_live`: a view per table of ``auditatlas.schema`` over the parts the manifest lists,
  released rankings resolved into a table, and the derived tables as live views (their queries).
- :func:`load_derived` builds this version's derived files if missing (``queries/derived.py``) and
  :func:`bind_derived` points the derived views at them: same columns plus the stored ranks.
- :func:`publish` makes the version the one plain names in schema ``main`` read (what
  ``queries.connect`` cursors see).
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa

from auditatlas import leases
from auditatlas.duck import connect as duck_connect
from auditatlas.schema import TABLES
from auditatlas.store import manifest_bytes, table_files  # noqa: F401 - manifest_bytes: callers read it here

from . import derived
from .template import text

_log = logging.getLogger(__name__)

# Every name a query may read, as ``main`` shows it: the tables (predictions as stored and as
# resolved), the predictions view and the derived tables.
NAMES: tuple[str, ...] = (
    *("predictions_stored" if t == "predictions" else t for t in TABLES),
    "predictions_resolved", "predictions", *derived.TABLES,
)


def bind_live(con: duckdb.DuckDBPyConnection, root: Path, manifest: dict, resolved: str | None = None,
              resolve: bool = True) -> None:
    """Views over the parts ``manifest`` lists, in ``con``'s current schema.

    ``resolved``: a schema of its own for the released rankings resolved
    (``predictions_resolved``), which other versions of the same sources share; with ``resolve``
    false they are there already. None: they are resolved into the current schema."""
    for table in TABLES:
        bind_table(con, root, manifest, table)
    if resolved is None:
        resolve_rankings(con)
    else:
        if resolve:
            resolve_rankings(con, into=resolved)
        con.execute(f"CREATE OR REPLACE VIEW predictions_resolved AS SELECT * FROM {resolved}.predictions_resolved")
    con.execute(f"CREATE OR REPLACE VIEW predictions AS {text('view_predictions')}")
    # Derived tables start as live views; bind_derived points them at their files.
    for name in derived.TABLES:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {text(derived.QUERY.get(name, name))}")


def resolve_rankings(con: duckdb.DuckDBPyConnection, into: str | None = None) -> None:
    """Released rankings resolved to per-step scores, as table ``predictions_resolved`` of schema
    ``into`` (the current one when None), from the current schema's tables: a small table (one
    row per judged step) made once, not a view every query recomputes."""
    target = "predictions_resolved" if into is None else f"{into}.predictions_resolved"
    con.execute(f"CREATE OR REPLACE TABLE {target} AS {text('resolve_rankings')}")


def bind_table(con: duckdb.DuckDBPyConnection, root: Path, manifest: dict, table: str) -> None:
    """The view of one store table over the parts ``manifest`` lists (a build reading only the
    steps, ``queries/search.py``, binds just that one)."""
    # Without the parts the manifest counts empty: DuckDB estimates a list of Parquet files from
    # its first, and an empty first part (a source of runs holds empty prediction parts) made it
    # take the predictions for zero rows and build joins' hash tables on them (at a million rooms
    # with a three-detector panel, POST localization 3.3 GB against 1.4 GB).
    files = table_files(root, table, manifest, skip_empty=True)
    physical = "predictions_stored" if table == "predictions" else table
    if files:
        # File paths come from our own manifest, not from users; quoting guards odd folders.
        listing = ", ".join(_quoted(f) for f in files)
        # Every part is written in the one schema (store.conform), so no union by name:
        # it makes DuckDB reconcile the schemas of every file on every scan.
        select = f"SELECT * FROM read_parquet([{listing}])"
    else:
        select = _empty_select(table)
    con.execute(f"CREATE OR REPLACE VIEW {physical} AS {select}")


def load_derived(root: Path, manifest: dict) -> tuple[Path | bool, leases.Lease | None]:
    """The derived folder of the store version ``manifest`` describes (built now if missing or
    unreadable) and the reader's lease on it; or False when the build failed (the views then
    stay the live queries: slower, as right)."""
    home = derived.cache_root(root)
    key = derived.cache_key(manifest_bytes(manifest), text)
    folder = home / key
    lease = derived.hold(folder) if derived.is_built(folder) else None
    if lease is not None and not derived.is_readable(folder):
        # A cache: a truncated file is thrown away and built again, never shown to a reader.
        _log.warning("derived tables in %s cannot be read; building them again", folder)
        lease.release()
        lease = None
        shutil.rmtree(folder, ignore_errors=True)
    if lease is None:
        try:
            build = duck_connect()
            try:
                build.execute(f"SET memory_limit = '{derived.BUILD_MEMORY}'")
                build.execute("SET preserve_insertion_order = false")
                # The very manifest the key hashes: the version's own, whatever a write does meanwhile.
                bind_live(build, root, manifest)
                derived.build(build, folder, text)
            finally:
                build.close()
        except (duckdb.Error, OSError, ValueError) as exc:
            _log.warning("derived tables of %s not built (%s); the detector views read the live queries", root, exc)
            return False, None
        lease = derived.hold(folder)
        if lease is None or not derived.is_readable(folder):
            if lease is not None:
                lease.release()
            return False, None
    derived.remove_stale(home, keep=key)
    return folder, lease


def sweep_derived(root: Path, manifest: dict) -> list[str]:
    """Remove the derived builds and scratch no live process uses, keeping ``manifest``'s own
    (a process's query layer calls it when it starts: an app start cleans a killed build)."""
    keep = derived.cache_key(manifest_bytes(manifest), text)
    return [name for home in derived.homes(root) for name in derived.remove_stale(home, keep)]


def bind_derived(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Point the derived views of ``con``'s current schema at ``folder``, all in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        for name, path in derived.files(folder).items():
            if name in derived.SMALL:
                # A few hundred or thousand rows: held in memory, where a scan costs microseconds
                # instead of the file open a Parquet read pays on every query (about 1 ms).
                con.execute(f"CREATE OR REPLACE TABLE {name}_in_memory AS SELECT * FROM read_parquet({_quoted(path)})")
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_in_memory")
            else:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({_quoted(path)})")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def single_corpus_sets(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether every prediction set's test steps are of one corpus (a corpus filter then keeps
    each set's rank groups whole)."""
    return bool(con.execute("SELECT count(*) = 0 FROM (SELECT set_id FROM test_sets GROUP BY set_id "
                            "HAVING count(DISTINCT corpus) > 1)").fetchone()[0])


def publish(con: duckdb.DuckDBPyConnection, schema: str) -> None:
    """Plain names in ``main`` read schema ``schema`` from now on, every name in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        for name in NAMES:
            con.execute(f"CREATE OR REPLACE VIEW main.{name} AS SELECT * FROM {schema}.{name}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _quoted(path: str | Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


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
