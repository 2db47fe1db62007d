"""The SQL template language of the named queries (``queries/sql/NAME.sql``).

A named query is DuckDB SQL plus six forms, expanded here from our own column and file names
only; every value is bound, never written into the text.

``$name``
    a bound parameter. The ``$name`` placeholders of a template (outside comments and string
    literals, fragments included) are the parameters the query declares
    (:func:`placeholders`, ``queries/named.py``).
``@slice``
    written after ``WITH``: the CTEs ``sliced_runs``, ``sliced_steps``, ``sliced_test_scores``,
    ``sliced_test_sets``, ``sliced_step_cube`` and ``sliced_propagation_cube``, each its table
    restricted to the shared slice
    (``queries/slices.py``). The query then takes ``params["slice"]``. Only the filtered columns
    get a predicate: ``col = ANY($col)`` for several values, ``col = $col`` for one (DuckDB turns
    a scalar equality into a constant filter on the scan). With nothing filtered each CTE is
    ``WHERE true``. A CTE no query reads costs nothing: DuckDB plans only the ones referenced.
``@in_slice(alias.run_id)``
    the run is in the slice: ``alias.run_id IN (SELECT run_id FROM sliced_runs)``, and the
    literal ``true`` when the slice filters nothing (DuckDB does not fold ``IN (all runs)``
    away; that semi-join costs about 100 ms of CPU on a 100,000-room store).
``@each($xs)``
    the list parameter ``xs`` as ``($xs__0, $xs__1, ...)``, each element bound on its own:
    DuckDB prunes row groups on an IN list of values, not on a list parameter. An empty list is
    ``(NULL)``, which matches nothing. Expanded when the values are bound (:func:`each`).
``@frame($name)``
    a table handed in by the caller, scanned where it lies: the caller's half of a join too
    large to pass as values (label doubt's supervised half, one row per labeled step). A
    Parquet file's path is read there (``read_parquet($name)``, the path bound); a pandas
    DataFrame or an Arrow table is registered by ``queries.run`` for that query only
    (:func:`frame_sources`). The query declares it as parameter ``name``.
``@name`` (any other name, not followed by ``(``)
    includes the fragment ``sql/_name.sql``, so a predicate or CTE several queries share (the
    run list's filters, the scored test steps, the ROC-AUC sum) is written once. A fragment may
    hold ``$name`` placeholders and include other fragments (the grid's run sums include the
    scored test steps), not the other forms.
"""
from __future__ import annotations

import re
from functools import cache
from os import PathLike
from pathlib import Path
from typing import Any

SQL_DIR = Path(__file__).resolve().parent / "sql"

_FRAGMENT = re.compile(r"@([a-z][a-z_]*)\b(?!\()")
_EACH = re.compile(r"@each\(\$([a-z_][a-z_0-9]*)\)")
_FRAME = re.compile(r"@frame\(\$([a-z_][a-z_0-9]*)\)")
_IN_SLICE = re.compile(r"@in_slice\(([a-z_][a-z_0-9]*\.run_id)\)")
# A string literal, a comment or a placeholder, left to right: a ``$`` inside either of the
# first two is no parameter (DuckDB reads them the same way).
_TOKEN = re.compile(r"'(?:[^']|'')*'|--[^\n]*|\$([A-Za-z_][A-Za-z_0-9]*)")


@cache
def raw(name: str) -> str:
    """The file ``sql/NAME.sql`` as written."""
    path = SQL_DIR / f"{name}.sql"
    if not path.exists():
        raise KeyError(f"no named query '{name}' in {SQL_DIR}")
    return path.read_text()


def uses_slice(name: str) -> bool:
    """Whether query ``name`` takes the shared slice (its text has ``@slice``)."""
    return "@slice" in raw(name)


@cache
def text(name: str, active: tuple[str, ...] = ()) -> str:
    """The text of query ``name`` with ``@in_slice``, ``@slice`` and fragments expanded for the
    filtered slice columns ``active`` (a name ending in ``=`` is bound to one value).
    ``@each`` stays: it needs the values (:func:`each`)."""
    sql = raw(name)
    sql = _IN_SLICE.sub(lambda m: f"{m.group(1)} IN (SELECT run_id FROM sliced_runs)" if active else "true", sql)
    if "@slice" in sql:
        sql = sql.replace("@slice", slice_ctes(active))
    return _fragments(sql)


@cache
def frames(name: str) -> frozenset[str]:
    """The ``@frame($name)`` tables query ``name`` takes (fragments included)."""
    return frozenset(_FRAME.findall(text(name)))


def frame_table(name: str) -> str:
    """The name a ``@frame($name)`` table is registered under while its query runs."""
    return f"frame__{name}"


def is_file(value: Any) -> bool:
    """Whether a ``@frame`` value is a Parquet file's path (read by DuckDB), not a table to register."""
    return isinstance(value, (str, PathLike))


def frame_sources(sql: str, bound: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``@frame($name)`` becomes ``read_parquet($name)`` for a path (bound as text) and the
    registered table's name for a table (``name`` is then no longer bound)."""
    def expand(m: re.Match) -> str:
        name = m.group(1)
        if is_file(bound.get(name)):
            bound[name] = str(bound[name])
            return f"read_parquet(${name})"
        bound.pop(name, None)
        return frame_table(name)

    return _FRAME.sub(expand, sql), bound


def _fragments(sql: str, depth: int = 0) -> str:
    """``sql`` with every ``@name`` replaced by its fragment, fragments within fragments too."""
    if depth > 4:
        raise ValueError("SQL fragments nest more than four deep (does one include itself?)")
    expanded = _FRAGMENT.sub(lambda m: raw("_" + m.group(1)).strip(), sql)
    return expanded if expanded == sql else _fragments(expanded, depth + 1)


def slice_ctes(active: tuple[str, ...]) -> str:
    """The CTEs ``@slice`` stands for; ``active`` names the filtered columns, a name ending in
    ``=`` bound to one value.

    Only the filtered columns get a predicate, written ``col = ANY($col)``: DuckDB pushes that
    into the Parquet scan (row-group pruning on the sorted, dictionary-encoded keys), while a
    catch-all ``len($col) = 0 OR list_contains($col, col)`` is evaluated row by row even when
    the list is empty (about 4x slower on a 100,000-room store).
    """
    def predicate(alias: str, col: str) -> str:
        if col.endswith("="):
            return f"{alias}.{col[:-1]} = ${col[:-1]}"
        return f"{alias}.{col} = ANY(${col})"

    def where(alias: str) -> str:
        return " AND ".join(predicate(alias, col) for col in active) or "true"

    return (f"sliced_runs AS (SELECT * FROM runs r WHERE {where('r')}),\n"
            f"sliced_steps AS (SELECT * FROM steps s WHERE {where('s')}),\n"
            f"sliced_test_scores AS (SELECT * FROM test_scores t WHERE {where('t')}),\n"
            # Only the ranked twins read this, and only when the slice filters columns it has.
            f"sliced_test_sets AS (SELECT * FROM test_sets t WHERE {where('t')}),\n"
            f"sliced_step_cube AS (SELECT * FROM step_cube t WHERE {where('t')}),\n"
            f"sliced_propagation_cube AS (SELECT * FROM propagation_cube t WHERE {where('t')})")


def each(sql: str, bound: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``@each($xs)`` becomes ``($xs__0, $xs__1, ...)``, each element of ``bound["xs"]`` bound
    on its own (``xs`` itself is then no longer bound). An empty list matches nothing."""
    def expand(m: re.Match) -> str:
        values = list(bound.pop(m.group(1)))
        for i, value in enumerate(values):
            bound[f"{m.group(1)}__{i}"] = value
        return "(" + (", ".join(f"${m.group(1)}__{i}" for i in range(len(values))) or "NULL") + ")"

    return _EACH.sub(expand, sql), bound


def placeholders(sql: str) -> frozenset[str]:
    """The ``$name`` parameters of ``sql``, outside comments and string literals."""
    return frozenset(m.group(1) for m in _TOKEN.finditer(sql) if m.group(1))
