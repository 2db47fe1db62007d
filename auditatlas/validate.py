"""Invariants every source must satisfy before it may enter the store.

They are checked in DuckDB over the staged Parquet parts (or Arrow tables), so they cost
little even for a million runs and never need the corpus in memory. The store writer calls
them (this module knows nothing of the store's layout: it is handed the folders).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from .duck import KEPT_MEMORY_LIMIT, bounded, kept_cursor
from .errors import StoreError, first_line
from .schema import empty_table

if TYPE_CHECKING:
    import duckdb

# (description, the tables it reads, SQL returning offending rows; empty result = invariant holds).
# The first table drives the check: with no row in it there is nothing to offend, and a write
# that stages none there (a prediction set has no runs) leaves the check out (``_active``).
_CHECKS: list[tuple[str, tuple[str, ...], str]] = [
    ("run ids are unique", ("runs",), "SELECT run_id FROM runs GROUP BY run_id HAVING count(*) > 1"),
    ("every step belongs to a run of this source", ("steps", "runs"),
     "SELECT s.run_id FROM steps s ANTI JOIN runs r USING (run_id)"),
    # Dense in two checks: no step_idx twice in a run, then n_steps steps from 0 to n_steps-1
    # (n distinct integers in 0..n-1 are all of them). One check counting DISTINCT step_idx per
    # run held its hash tables in memory: at a million rooms it sat at the checks' memory limit
    # and failed a build now and then, where these two group as the others do and spill.
    ("a step_idx appears once in its run", ("steps",),
     "SELECT run_id FROM steps GROUP BY run_id, step_idx HAVING count(*) > 1"),
    ("step_idx is dense 0..n_steps-1 in every run", ("runs", "steps"),
     """SELECT r.run_id FROM runs r LEFT JOIN (
            SELECT run_id, count(*) n, min(step_idx) lo, max(step_idx) hi FROM steps GROUP BY run_id) s USING (run_id)
        WHERE coalesce(s.n, 0) <> r.n_steps OR (r.n_steps > 0 AND (s.lo <> 0 OR s.hi <> r.n_steps - 1))"""),
    ("every edge points backwards in time within one run", ("edges", "runs"),
     """SELECT e.run_id FROM edges e LEFT JOIN runs r USING (run_id)
        WHERE r.run_id IS NULL OR e.src_idx >= e.dst_idx OR e.src_idx < 0 OR e.dst_idx >= r.n_steps"""),
    ("a run's anomalous_steps counts its steps labeled 1", ("runs", "steps"),
     """SELECT r.run_id FROM runs r LEFT JOIN (
            SELECT run_id, count(*) a FROM steps WHERE label = 1 GROUP BY run_id) s USING (run_id)
        WHERE r.anomalous_steps IS DISTINCT FROM coalesce(s.a, 0)"""),
    # The chain columns are the writer's (auditatlas/chains.py); these cheap checks hold them to
    # the labels and the run without restating the rule: a role only on a failed step of a
    # chain, and a run's chain length its longest chain.
    ("a step's chain role sits on a failed step of a chain", ("steps",),
     """SELECT run_id FROM steps
        WHERE chain_length IS NULL OR chain_length = 1 OR chain_length < 0
           OR (chain_role IS NOT NULL) <> (coalesce(label = 1, false) AND chain_length >= 2)
           OR chain_role NOT IN ('origin', 'mid', 'down')"""),
    ("a run's chain_length is its longest chain", ("runs", "steps"),
     """SELECT r.run_id FROM runs r LEFT JOIN (
            SELECT run_id, max(chain_length) c FROM steps WHERE chain_length > 0 GROUP BY run_id) s USING (run_id)
        WHERE r.chain_length IS DISTINCT FROM coalesce(s.c, 0)"""),
    ("step labels are 0, 1 or null", ("steps",),
     "SELECT run_id FROM steps WHERE label IS NOT NULL AND label NOT IN (0, 1)"),
    ("run outcomes are success, failure or unknown", ("runs",),
     "SELECT run_id FROM runs WHERE outcome NOT IN ('success', 'failure', 'unknown') OR outcome IS NULL"),
    ("prediction set ids are unique", ("prediction_sets",),
     "SELECT set_id FROM prediction_sets GROUP BY set_id HAVING count(*) > 1"),
    ("every prediction belongs to a prediction set of this source", ("predictions", "prediction_sets"),
     "SELECT p.set_id FROM predictions p ANTI JOIN prediction_sets s USING (set_id)"),
    ("every ranking belongs to a prediction set of this source", ("rankings", "prediction_sets"),
     "SELECT p.set_id FROM rankings p ANTI JOIN prediction_sets s USING (set_id)"),
    ("a prediction is keyed to exactly one step, run or config", ("predictions",),
     """SELECT set_id FROM predictions
        WHERE (run_id IS NOT NULL)::INT + (config_id IS NOT NULL)::INT <> 1
           OR (config_id IS NOT NULL AND step_idx IS NOT NULL)"""),
    ("config ids are unique", ("configs",), "SELECT config_id FROM configs GROUP BY config_id HAVING count(*) > 1"),
    ("every capability belongs to a config of this source", ("capabilities", "configs"),
     "SELECT c.config_id FROM capabilities c ANTI JOIN configs g USING (config_id)"),
]


# The tables the checks read: a write that adds to a source must check what it adds to each.
CHECKED_TABLES: tuple[str, ...] = ("runs", "steps", "edges", "prediction_sets", "predictions", "rankings",
                                   "configs", "capabilities")

# Each check's first offender as (its index, the id). All of them in one statement give the
# first broken one (in the order above): a third cheaper than sixteen statements on a small
# source (each check still scans what it scanned). Every offender column is an id (a string).
# A large source is checked one statement at a time instead: DuckDB runs the branches of one
# statement at once, each with its hash tables, and at a million rooms they did not fit
# MEMORY_LIMIT together ("failed to pin block"), where each alone spills and passes.
_FIRST_OFFENDER = [f"SELECT {i} AS k, CAST(t.v AS VARCHAR) AS v FROM ({sql}) AS t(v) LIMIT 1"
                   for i, (_, _, sql) in enumerate(_CHECKS)]


def _first_broken(active: Sequence[int]) -> str:
    return "SELECT k, v FROM (" + " UNION ALL ".join(f"({_FIRST_OFFENDER[i]})" for i in active) + ") ORDER BY k LIMIT 1"


def _active(nonempty: set[str]) -> list[int]:
    """The checks that can find an offender: those whose driving table has rows."""
    return [i for i, (_, tables, _) in enumerate(_CHECKS) if tables[0] in nonempty]


def _read_by(active: Sequence[int]) -> set[str]:
    return {table for i in active for table in _CHECKS[i][1]}


def _has_rows(files: Sequence[Path]) -> bool:
    """Whether any of these Parquet parts holds a row (their footers only; a part whose footer
    cannot be read counts as holding rows, and the check's own read then says what is wrong)."""
    import pyarrow.parquet as pq

    def rows(path: Path) -> int:
        try:
            return pq.read_metadata(path).num_rows
        except (OSError, pa.ArrowException):
            return 1

    return any(rows(f) for f in files)


# Bounded: the checks group a million runs; DuckDB spills past this instead of growing.
# At a million rooms 256 MB runs them as fast as 512 MB did (14 s) with 240 MB less. The
# process's kept database (``duck.kept_cursor``) has the same bound.
MEMORY_LIMIT = KEPT_MEMORY_LIMIT

# A staged source up to this size is checked on a cursor of the process's kept database
# (``duck.kept_cursor``) instead of a database of its own: a new DuckDB database and its first
# statements cost about 20 ms of CPU (the checks of a small write: 58 ms on their own database,
# 36 on the kept one, bench/writes.py), as much as the checks of a review verdict or a receiver
# batch; and checks over this little Parquet stay far below MEMORY_LIMIT, so that database never
# needs to spill (it has no spill folder: DuckDB cannot move one once used, and each write has its own).
KEPT_MAX_BYTES = 16 * 1024 * 1024


def check_invariants(tables: Mapping[str, pa.Table], source: str) -> None:
    """Raise StoreError naming the first broken invariant and an example offender."""
    # DuckDB is loaded on first use: the store imports this module, and an ingest worker that
    # only writes parts would otherwise load DuckDB (about 55 MB and 0.9 s) for nothing.
    active = _active({name for name, table in tables.items() if table.num_rows})
    if not active:
        return
    con = kept_cursor()
    try:
        for name, table in tables.items():
            con.register(name, table)
        _run_checks(con, source, checks=active)
    finally:
        con.close()


def check_staged(folder: str | Path, source: str, spill: str | Path | None = None) -> None:
    """The same checks over a staging folder of Parquet parts (``TABLE/part-*.parquet``).

    ``spill``: a folder where DuckDB may spill (the writer passes a scratch folder of the
    store, which recovery removes if the writer dies, and removes it afterwards); a source of
    at most KEPT_MAX_BYTES is checked on the kept database, which does not spill.
    """
    folder = Path(folder)
    parts = {p.name: sorted(p.glob("part-*.parquet")) for p in sorted(folder.iterdir()) if p.is_dir()}
    active = _active({name for name, files in parts.items() if _has_rows(files)})
    if not active:
        return
    small = sum(f.stat().st_size for files in parts.values() for f in files) <= KEPT_MAX_BYTES
    con = kept_cursor() if small else bounded(MEMORY_LIMIT, spill)
    try:
        for name in sorted(_read_by(active)):
            pattern = str(folder / name / "part-*.parquet").replace("'", "''")
            # Temporary: a view of the connection only, gone with it (the kept database's
            # other cursors check other sources at the same time).
            con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM read_parquet('{pattern}')")
        _run_checks(con, source, one_statement=small, checks=active)
    finally:
        con.close()


def check_added(added: Mapping[str, Sequence[Path]], held_runs: Sequence[Path], source: str,
                spill: str | Path | None = None) -> None:
    """The same checks over the rows a write adds to a source it carries forward (the parts in
    ``added`` per table), and the added run ids against those of the runs parts it carries
    (``held_runs``).

    Enough for a write whose carried rows were checked when they landed and lost only whole runs
    (``SourceWriter.carry_segments``): every check but the uniqueness of run ids holds run by
    run, and a step or edge of a carried run among the added rows is named as one without a run.
    So a write costs checks over its own rows, not over the source.
    """
    active = _active({name for name in CHECKED_TABLES if _has_rows(added.get(name, ()))})
    if not active and not held_runs:
        return
    small = sum(Path(f).stat().st_size for files in added.values() for f in files) <= KEPT_MAX_BYTES
    con = kept_cursor() if small else bounded(MEMORY_LIMIT, spill)
    try:
        for name in sorted(_read_by(active) | {"runs"}):
            files = [str(f) for f in added.get(name, ())]
            if files:
                listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)  # a view takes no parameter
                con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM read_parquet([{listing}])")
            else:
                con.register(name, empty_table(name))
        _run_checks(con, source, one_statement=small, checks=active)
        if held_runs:
            row = con.execute("SELECT run_id FROM runs SEMI JOIN read_parquet($held) h USING (run_id) LIMIT 1",
                              {"held": [str(p) for p in held_runs]}).fetchone()
            if row is not None:
                raise StoreError(f"source '{source}' breaks the invariant 'run ids are unique' (e.g. {row[0]!r}); "
                                 "nothing was written.")
    finally:
        con.close()


def _run_checks(con: duckdb.DuckDBPyConnection, source: str, one_statement: bool = True,
                checks: Sequence[int] | None = None) -> None:
    """The checks ``checks`` (indices of ``_CHECKS``; all of them when None) over ``con``'s views."""
    import duckdb

    active = range(len(_CHECKS)) if checks is None else checks
    if not active:
        return
    # One statement for every check on a small source; one per check on a large one, so a check
    # that cannot run is named.
    statements = [(None, _first_broken(active))] if one_statement else [(i, _FIRST_OFFENDER[i]) for i in active]
    row = None
    for i, one in statements:
        try:
            row = con.execute(one).fetchone()
        except duckdb.Error as exc:  # e.g. out of memory: the write stops in one sentence, not a traceback
            which = "" if i is None else f"the check '{_CHECKS[i][0]}': "
            raise StoreError(f"source '{source}' could not be checked ({which}{first_line(exc)}); "
                             "nothing was written.") from exc
        if row is not None:
            break
    if row is not None:
        description = _CHECKS[row[0]][0]
        raise StoreError(
            f"source '{source}' breaks the invariant '{description}' (e.g. {row[1]!r}); nothing was written."
        )
