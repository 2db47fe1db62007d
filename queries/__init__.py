"""The DuckDB side of Audit Atlas: the only reader of the store, and its named queries.

All SQL lives in this package (``queries/sql/*.sql``, the views of ``views.py``). Callers ask
for a query by name and pass parameters; values are always bound, never formatted in.

The modules, one job each:

``database.py``  one in-memory DuckDB database per store, its per-thread cursors and its store
                 versions (one DuckDB schema per manifest, so a query reads one whole version)
``views.py``     a version's views over the store's Parquet files and over its derived tables
``derived.py``   the derived tables kept on disk per store version, and the queries reading them
``template.py``  the SQL template language (``$name``, ``@slice``, ``@in_slice``, ``@each``,
                 fragments)
``named.py``     what each named query declares (parameters, slice, derived tables) and binding
``twins.py``     the twins over the derived tables and when one answers for its query
``slices.py``    the shared slice's columns and values
``labels.py``    the label choice (released / reviewed / agreed): a version's schema per choice
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from . import labels, named, template, twins
from .database import for_store
from .slices import SLICE_COLUMNS, slice_params

__all__ = ["SLICE_COLUMNS", "build_derived", "connect", "one_version", "run", "runner", "slice_params", "warm"]


def connect(root: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """A new cursor on the store's views (store_dir() when root is None); the caller closes it."""
    return for_store(root).cursor()


def warm(root: str | Path | None = None) -> bool:
    """Build this store version's derived tables now and bind them in this process's views."""
    db = for_store(root)
    with db.reading(derived=True) as version:
        return bool(version.derived)


def build_derived(root: str | Path | None = None) -> bool:
    """Build this store version's derived tables on disk, for the readers to come, without
    opening the store's views here: what a writer runs after a write (the command line, which
    then exits, so the first Detectors view after a re-score does not wait for them). False
    when the build failed (the readers' views then stay the live queries)."""
    from auditatlas.store import read_manifest, store_dir

    from . import views

    root = Path(store_dir(root)).resolve()
    folder, lease = views.load_derived(root, read_manifest(root))
    if lease is not None:
        lease.release()
    return bool(folder)


def run(name: str, params: Mapping[str, Any] | None = None, root: str | Path | None = None):
    """Run named query ``name`` with bound ``params``; returns a pandas DataFrame.

    Queries over the shared slice take it as ``params["slice"]`` (see slice_params). The
    parameters are the ones the query declares (its ``$name`` placeholders), no more, no fewer.
    Any query also takes the label choice (``queries/labels.py``): the slice's ``labels``, or
    ``params["labels"]`` for a query without the slice; the released labels when neither.
    A table the query takes (``@frame($name)``) is a pandas DataFrame, an Arrow table or a
    Parquet file's path.
    """
    query, choice, params = _called(name, params)
    db = for_store(root)
    # One store version for the whole query: its twin is chosen from, and its text runs on,
    # the same views, whatever a write does meanwhile. Derived tables are built on first use
    # per version: a query reading one, or with a twin, needs them.
    with db.reading(derived=query.reads_derived or twins.has_twin(name), labels=choice) as version:
        return _run_on(db, version, name, choice, params)


@contextmanager
def one_version(root: str | Path | None = None) -> Iterator[Callable[..., Any]]:
    """A query function (as :func:`runner`'s) whose every query reads one store version, the one
    current when the block starts, whatever writes land meanwhile: for an analysis that reads
    the store in several queries and puts their rows together (by step numbers, say), where
    two versions would mix. Its derived tables are settled once, first."""
    db = for_store(root)
    with db.reading(derived=True) as version:
        def query(name: str, params: Mapping[str, Any] | None = None):
            _, choice, params = _called(name, params)
            if choice != labels.DEFAULT_LABELS:
                db.settle_labels(version, choice)
            return _run_on(db, version, name, choice, params)

        yield query


def _called(name: str, params: Mapping[str, Any] | None):
    """Named query ``name``, the call's label choice and its parameters without it; a wrong call
    fails here, before any store work."""
    choice = labels.choice_of(params)
    params = labels.without_choice(params)
    query = named.query(name)
    named.check(query, params)
    return query, choice, params


def _run_on(db, version, name: str, choice: str, params: Mapping[str, Any]):
    """``name`` on ``version`` of ``db``, pinned by the caller with its label choice's schema made."""
    # The twins read stored released labels and ranks: only the released labels take them.
    chosen = named.query(twins.choose(name, params, version) if choice == labels.DEFAULT_LABELS else name)
    sql, bound = named.prepare(chosen, params)
    cursor = db.cursor_on(version, choice)
    # The caller's tables (not files: those are read by the query), on this thread's cursor
    # for this query only.
    tables = [frame for frame in chosen.frames if not template.is_file(params[frame])]
    for frame in tables:
        cursor.register(template.frame_table(frame), params[frame])
    try:
        return cursor.execute(sql, bound).df()
    except duckdb.Error as exc:
        db.raise_if_broken(exc)
        raise
    finally:
        for frame in tables:
            cursor.unregister(template.frame_table(frame))


def runner(root: str | Path | None = None) -> Callable[..., Any]:
    """``run`` bound to the store at ``root``: the query function analyses take (CLI, tests, bench)."""
    return lambda name, params=None: run(name, params, root=root)
