"""Propagation chains and step roles (MAADBench Figures 8 and 11; shared/specs/analyses.md).

A chain is the sorted set of failed steps (label 1) within one propagation scope (the same run
and puzzle; steps without a scope form the run's own scope), kept when it has at least two. Its
first step is the **origin**, its last the **down** step, the rest **mid**. Unlabeled steps are
not failures and do not break a chain: they are simply not part of it.

This is the one place the rule is written. The store writer applies it to every batch of
steps (:func:`chain_columns`) and stores the result on each step (``chain_role``,
``chain_length``) and run (``chain_length``); every query and view reads those columns.
"""
from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

ORIGIN, MID, DOWN = "origin", "mid", "down"
ROLES: tuple[str, ...] = (ORIGIN, MID, DOWN)
MIN_CHAIN = 2  # failed steps one scope needs to form a chain


def chain_columns(steps: pa.Table) -> tuple[pa.Array, pa.Array]:
    """Each step's chain role and the length of the chain its scope forms, row for row.

    ``steps`` needs ``run_id``, ``scope``, ``step_idx`` and ``label`` (whole runs). Returns
    ``chain_role`` (string: origin / mid / down, null for a step outside a chain) and
    ``chain_length`` (int64: the failed steps of the step's scope when they form a chain, else
    0; the same on every step of the scope, failed or not).

    Arrow, not DuckDB: the writer calls it per batch, and DuckDB there held on to about 100 MB
    of a worker's memory after every chunk. Each (run, scope) becomes one integer (dictionary
    codes of both; a missing scope gets its own code), so grouping and looking a step's scope
    up are integer hash operations (a join on the strings took about five times as long).
    """
    scope = _codes(steps.column("scope"))
    scope_count = pc.max(scope).as_py()
    key = pc.add(pc.multiply(_codes(steps.column("run_id")), (scope_count or 0) + 1), scope)
    failed = pc.fill_null(pc.equal(steps.column("label"), 1), False)
    per_scope = (pa.table({"key": key, "step_idx": steps.column("step_idx")}).filter(failed)
                 .group_by("key")
                 .aggregate([([], "count_all"), ("step_idx", "min"), ("step_idx", "max")]))
    per_scope = per_scope.filter(pc.greater_equal(per_scope.column("count_all"), MIN_CHAIN))
    at = pc.index_in(key, value_set=per_scope.column("key"))
    length = pc.fill_null(pc.take(per_scope.column("count_all"), at), 0).cast(pa.int64())
    idx = steps.column("step_idx")
    position = pc.if_else(pc.equal(idx, pc.take(per_scope.column("step_idx_min"), at)), ORIGIN,
                          pc.if_else(pc.equal(idx, pc.take(per_scope.column("step_idx_max"), at)), DOWN, MID))
    role = pc.if_else(pc.and_(failed, pc.greater(length, 0)), position, pa.scalar(None, pa.string()))
    return _one_chunk(role), _one_chunk(length)


def _codes(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Dense int64 codes of ``values``, null as a code of its own (0; the others from 1)."""
    encoded = pc.dictionary_encode(_one_chunk(values))  # one array: one dictionary
    return pc.fill_null(pc.add(encoded.indices.cast(pa.int64()), 1), 0)


def _one_chunk(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def run_chains(steps: Iterable[tuple[int, str | None, int | None]]) -> dict[int, tuple[str | None, int]]:
    """``{step_idx: (chain role, chain length)}`` for every step of one run.

    ``steps`` holds ``(step_idx, scope, label)``; a step without a scope is in the run's own
    scope (``None``). For steps that do not come from the store (which carries both).
    """
    rows = [(int(i), None if s is None else str(s), None if label is None else int(label)) for i, s, label in steps]
    roles, lengths = chain_columns(pa.table({
        "run_id": pa.array([""] * len(rows), pa.string()),
        "scope": pa.array([s for _, s, _ in rows], pa.string()),
        "step_idx": pa.array([i for i, _, _ in rows], pa.int64()),
        "label": pa.array([label for _, _, label in rows], pa.int64()),
    }))
    return {i: (role, length) for (i, _, _), role, length in zip(rows, roles.to_pylist(), lengths.to_pylist())}


def step_roles(steps: Iterable[tuple[int, str | None, int | None]]) -> dict[int, str]:
    """``{step_idx: role}`` for the steps of one run that belong to a chain (:func:`run_chains`)."""
    return {i: role for i, (role, _) in run_chains(steps).items() if role is not None}
