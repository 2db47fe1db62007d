"""Preparing a batch for the store: the schema's shape plus the columns the writer derives.

An adapter hands over whole runs (a run's steps and edges come with it); :func:`prepare` casts
every table to ``auditatlas.schema``, then adds what is computed once here rather than per
query: the run's slice keys on its steps, each step's chain role and chain length
(``auditatlas.chains``), each run's anomalous steps and chain length, and the step ranks of
every prediction set. Then it sorts every table by run (``schema.SORT_KEYS``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .chains import chain_columns
from .duck import connect as duck_connect
from .duck import kept_cursor
from .errors import StoreError
from .schema import RUN_STEP_COUNTS, SORT_KEYS, STEP_CHAIN_COLUMNS, STEP_SLICE_KEYS, TABLES, empty_table, sort_order

TableLike = Any  # pa.Table | pandas.DataFrame | list[dict]


def conform(name: str, data: TableLike | None) -> pa.Table:
    """Cast adapter output to the schema of table ``name`` (missing columns become null)."""
    schema = TABLES[name]
    if data is None:
        return empty_table(name)
    if isinstance(data, list):
        cols = {f.name: [row.get(f.name) for row in data] for f in schema}
        return pa.table(cols, schema=schema)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        data = pa.Table.from_pandas(data, preserve_index=False)
    unknown = set(data.column_names) - set(schema.names)
    if unknown:
        raise StoreError(f"table '{name}' has columns outside the schema: {sorted(unknown)}")
    arrays = []
    for field in schema:
        if field.name in data.column_names:
            arrays.append(data.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(data.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def prepare(tables: Mapping[str, TableLike]) -> dict[str, pa.Table]:
    """One batch in the store's shape: conformed, the derived columns written, sorted by run.

    A batch holds whole runs (a run's steps and edges come with it), so the slice keys, the
    chains and the per-run counts and ranks can be computed batch by batch. Adapters never
    write the derived columns; whatever they hold is overwritten here.
    """
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise StoreError(f"unknown table(s) {sorted(unknown)}; the schema has {list(TABLES)}.")
    out = {name: conform(name, data) for name, data in tables.items() if data is not None}
    if "steps" in out and out["steps"].num_rows:
        out["steps"] = _with_chains(out["steps"])
    if "runs" in out and out["runs"].num_rows:
        out["runs"] = _with_step_counts(out["runs"], out.get("steps"))
    if "steps" in out and out["steps"].num_rows and "runs" in out and out["runs"].num_rows:
        out["steps"] = _with_run_keys(out["steps"], out["runs"])
    if "predictions" in out and out["predictions"].num_rows:
        out["predictions"] = _with_ranks(out["predictions"])
    for name, table in out.items():
        if table.num_rows > 1 and name in SORT_KEYS:
            out[name] = table.sort_by(sort_order(name))
    return out


def _with_run_keys(steps: pa.Table, runs: pa.Table) -> pa.Table:
    """Copy each run's slice keys onto its steps (a step's own value, if any, is overwritten)."""
    index = pc.index_in(steps.column("run_id"), value_set=runs.column("run_id"))
    for key in STEP_SLICE_KEYS:
        values = pc.take(runs.column(key), index)
        steps = steps.set_column(steps.schema.get_field_index(key), key, values.cast(TABLES["steps"].field(key).type))
    return steps


def _with_chains(steps: pa.Table) -> pa.Table:
    """Each step's chain role and chain length (``auditatlas.chains``, the one statement of the rule)."""
    for key, values in zip(STEP_CHAIN_COLUMNS, chain_columns(steps)):
        steps = steps.set_column(steps.schema.get_field_index(key), key, values.cast(TABLES["steps"].field(key).type))
    return steps


def _with_step_counts(runs: pa.Table, steps: pa.Table | None) -> pa.Table:
    """Each run's anomalous steps and chain length, from the batch's steps (0 without any).

    ``steps`` carry their chain lengths already (:func:`_with_chains`): a run's chain length is
    its longest chain, the run list's "chain" column. Counted with Arrow's group_by over the
    failed steps (every chain is made of them): DuckDB here held on to about 100 MB of a
    worker's memory after every chunk.
    """
    anomalous = pa.array([0] * runs.num_rows, pa.int64())
    chain = anomalous
    if steps is not None and steps.num_rows:
        failed = steps.select(["run_id", "label", "chain_length"]).filter(pc.equal(steps.column("label"), 1))
        counts = failed.group_by("run_id").aggregate([([], "count_all"), ("chain_length", "max")])
        index = pc.index_in(runs.column("run_id"), value_set=counts.column("run_id"))
        anomalous = pc.fill_null(pc.take(counts.column("count_all"), index), 0).cast(pa.int64())
        chain = pc.fill_null(pc.take(counts.column("chain_length_max"), index), 0).cast(pa.int64())
    for key, values in zip(RUN_STEP_COUNTS, (anomalous, chain)):
        runs = runs.set_column(runs.schema.get_field_index(key), key, values)
    return runs


# A batch of up to this many predictions is ranked on the process's kept database (a new one
# costs as much as ranking a small batch); a larger one on a database of its own, whose memory
# is DuckDB's default.
KEPT_MAX_PREDICTIONS = 100_000


def _with_ranks(predictions: pa.Table) -> pa.Table:
    """Rank of each step-level score within (set_id, run_id): 1 = highest, ties to the earlier step.
    The rows come back in no particular order: ``prepare`` sorts them."""
    con = kept_cursor() if predictions.num_rows <= KEPT_MAX_PREDICTIONS else duck_connect()
    try:
        con.register("p", predictions)
        ranked = con.sql("""
            SELECT * REPLACE (
                CASE WHEN step_idx IS NOT NULL AND run_id IS NOT NULL THEN
                    row_number() OVER (PARTITION BY set_id, run_id, (step_idx IS NOT NULL)
                                       ORDER BY score DESC NULLS LAST, step_idx)
                END AS rank)
            FROM p
        """).to_arrow_table()
    finally:
        con.close()
    return conform("predictions", ranked)

