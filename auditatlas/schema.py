"""The one schema every corpus is converted into.

Every adapter returns tables in exactly these shapes; the store refuses anything else. The
column meanings and invariants are documented in ``data/README.md`` (keep the two in step).

Ids are strings unique across corpora: ``<corpus>:<native id>``.
"""
from __future__ import annotations

import pyarrow as pa

# Declared without pyarrow, for the command line's parser; part of the schema all the same.
from .slice_and_labels import DEFAULT_LABELS, LABEL_CHOICES, SLICE_COLUMNS  # noqa: F401 - the schema's API

STR = pa.string()
INT = pa.int64()
FLOAT = pa.float64()
BOOL = pa.bool_()

TABLES: dict[str, pa.Schema] = {
    # One row per corpus a source brings (what the Overview says is loaded).
    "corpora": pa.schema([
        ("corpus", STR),
        ("title", STR),
        ("kind", STR),  # real | simulated
        ("label_process", STR),
        ("description", STR),
    ]),
    "runs": pa.schema([
        ("run_id", STR),
        ("corpus", STR),
        ("source_file", STR),
        ("backbone", STR),
        ("temperature", FLOAT),
        ("domain", STR),
        ("difficulty", STR),
        ("task_id", STR),
        ("room_id", STR),  # grouping key for room-disjoint splits (MAADBench)
        ("outcome", STR),  # success | failure | unknown
        ("n_steps", INT),
        # Written by the store writer from the run's steps (never by an adapter), so the run
        # list sorts and filters on them with a scan of runs (data/README.md, "Layout"):
        ("anomalous_steps", INT),  # steps labeled 1
        ("chain_length", INT),  # the run's longest chain (its steps' largest chain_length); else 0
        ("label_process", STR),
        ("run_key", STR),  # CatchBench sha256 run key (Who&When)
        ("legacy_key", STR),  # CatchBench legacy NNN-<hex> key (Who&When)
        ("extra", STR),  # JSON
    ]),
    "steps": pa.schema([
        ("run_id", STR),
        ("corpus", STR),
        # The run's slice keys, copied onto every step by the store writer (never by an
        # adapter), so an aggregate over the slice scans one table instead of joining every
        # step to its run on a long string id (data/README.md, "Layout").
        ("backbone", STR),
        ("difficulty", STR),
        ("temperature", FLOAT),
        ("domain", STR),
        ("outcome", STR),
        ("step_idx", INT),  # dense 0..n_steps-1 in trace order
        ("step_id", STR),  # native id (action_id, message id, ...)
        ("agent", STR),
        ("action", STR),
        ("scope", STR),  # propagation scope: puzzle id, or the run for corpora without puzzles
        ("scope_success", BOOL),  # did the scope (puzzle / run) still succeed
        ("text_in", STR),
        ("text_out", STR),
        ("tokens_in", INT),
        ("tokens_out", INT),
        ("duration_s", FLOAT),
        ("confidence", FLOAT),
        ("is_tool", BOOL),
        ("error_code", STR),
        ("failure_mode", STR),
        ("is_cascade", BOOL),  # an upstream step of the same scope already failed
        ("label", pa.int8()),  # 1 anomaly, 0 normal, null unlabeled
        ("is_format_error", BOOL),
        ("label_source", STR),
        # The step's place in its scope's propagation chain, written by the store writer from
        # the run's steps (never by an adapter; auditatlas/chains.py states the rule), so every
        # chain view reads it instead of grouping failed steps per scope:
        ("chain_role", STR),  # origin | mid | down for a failed step of a chain; else null
        ("chain_length", INT),  # failed steps of the step's scope when they form a chain; else 0
        ("extra", STR),  # JSON
    ]),
    "edges": pa.schema([
        ("run_id", STR),
        ("corpus", STR),
        ("src_idx", INT),
        ("dst_idx", INT),
        ("kind", STR),  # data | tool_parent | puzzle_sequence | context | handoff | tool_call | read_write | child | link
        ("provenance", STR),  # observed | modeled | inferred
    ]),
    "prediction_sets": pa.schema([
        ("set_id", STR),
        ("corpus", STR),
        ("method", STR),
        ("family", STR),
        ("supervision", STR),
        ("granularity", STR),  # step | run | config
        ("protocol", STR),
        ("model", STR),
        ("seed", INT),
        ("params", STR),  # JSON
        ("feature_set", STR),
        ("slice", STR),  # JSON of the slice it was computed on
        ("origin", STR),  # release (read from a release file) | rescore (computed here)
        ("source_file", STR),
        ("created_at", STR),
    ]),
    # Scores keyed to exactly one step (run_id, step_idx), run (run_id) or
    # config capability (config_id, capability).
    "predictions": pa.schema([
        ("set_id", STR),
        ("corpus", STR),
        ("run_id", STR),
        ("step_idx", INT),
        ("config_id", STR),
        ("capability", STR),
        ("score", FLOAT),
        ("pred_label", pa.int8()),
        ("split", STR),  # train | test | all
        # 1 = highest score of the step within (set_id, run_id), ties to the earlier step;
        # computed once by the store writer, null for run- and config-level rows.
        ("rank", INT),
    ]),
    # Ranking-style predictions as released (a judge's top pick and ranking per run),
    # keyed by run key; the ``predictions`` view turns them into one score per step of
    # every matching run, so it does not matter which was ingested first.
    "rankings": pa.schema([
        ("set_id", STR),
        ("corpus", STR),
        ("run_key", STR),
        ("top", INT),
        ("ranking", pa.list_(INT)),
    ]),
    "configs": pa.schema([
        ("config_id", STR),
        ("corpus", STR),
        ("config_source", STR),  # where the release found the configuration (mcp, n8n, synthetic, ...)
        ("label_process", STR),
        ("n_capabilities", INT),
        ("spec_tokens", pa.list_(STR)),
        ("extra", STR),
    ]),
    "capabilities": pa.schema([
        ("config_id", STR),
        ("corpus", STR),
        ("cap_idx", INT),
        ("name", STR),
        ("type", STR),
        ("permission_level", STR),
        ("excess", BOOL),
    ]),
    # Published numbers a recomputed board must equal (CatchBench golden board).
    "published_values": pa.schema([
        ("board", STR),
        ("corpus", STR),
        ("entrant", STR),
        ("metric", STR),
        ("value", FLOAT),
    ]),
    # A reviewer's verdicts on steps (auditatlas/verdicts.py): append-only, one row per verdict
    # given, never updated; the latest per step counts (queries/sql/reviewed_labels.sql). Only
    # the ``reviews`` source holds rows. Keyed by (run_id, step_idx) and not joined on write:
    # a verdict outlives a re-ingest that drops its step (it is then reported as orphaned).
    "verdicts": pa.schema([
        ("verdict_id", STR),  # unique per verdict given (an ingest skips ids already held)
        ("corpus", STR),
        ("run_id", STR),
        ("step_idx", INT),
        ("verdict", STR),  # anomaly | normal | unsure
        ("failure_mode", STR),
        ("note", STR),
        ("reviewer", STR),
        ("reviewed_at", STR),  # UTC, ISO 8601 with microseconds (sorts as time does)
        ("queue", STR),  # the review order it was given from (random | doubt | flagged | ...), or the file it came in
        ("seed", INT),  # that order's seed, where it has one
    ]),
    # Guided tours (auditatlas/views/tours.py): append-only, one row per stop of each saved version
    # of a tour, never updated; the latest version of a name counts (queries/sql/tour_stops.sql).
    # Only the ``tours`` source holds rows. A stop is a view's link (no store ids joined on
    # write), so a tour opens on any store that holds the same data.
    "tours": pa.schema([
        ("version_id", STR),  # one per save: every row of a save shares it
        ("name", STR),  # the tour's name (the author's words: untrusted text)
        ("saved_at", STR),  # UTC, ISO 8601 with microseconds (sorts as time does)
        ("author", STR),
        ("stop_idx", INT),  # 0-based order of the stop; null on the one row of a removal
        ("link", STR),  # the view, as the app's own relative link (/boards?tab=POST)
        ("sentence", STR),  # the author's explanation shown above the view (untrusted text)
    ]),
}

TABLE_NAMES: tuple[str, ...] = tuple(TABLES)

# Tables added after format 5: a source written before has no folder for them and reads as
# holding none of their rows (no rebuild of the store needed for a table only new writers fill).
LATER_TABLES: frozenset[str] = frozenset({"verdicts", "tours"})

# Run columns the store writer copies onto each step (the shared slice, minus corpus which
# every table carries anyway).
STEP_SLICE_KEYS: tuple[str, ...] = tuple(c for c in SLICE_COLUMNS if c != "corpus")
# Step columns the store writer computes from the run's steps (auditatlas.chains).
STEP_CHAIN_COLUMNS: tuple[str, ...] = ("chain_role", "chain_length")
# Run columns the store writer computes from a batch's steps.
RUN_STEP_COUNTS: tuple[str, ...] = ("anomalous_steps", "chain_length")

# How each table is sorted on disk, so one run is one or two row groups (data/README.md).
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("run_id",),
    "steps": ("run_id", "step_idx"),
    "edges": ("run_id", "dst_idx", "src_idx"),
    "predictions": ("run_id", "set_id", "step_idx", "config_id", "capability"),
    "prediction_sets": ("set_id",),
    "rankings": ("set_id", "run_key"),
    "configs": ("config_id",),
    "capabilities": ("config_id", "cap_idx"),
}


def sort_order(name: str) -> list[tuple[str, str]]:
    """Table ``name``'s store order as Arrow's ``sort_by`` takes it (nulls last, as DuckDB's
    ``NULLS LAST``; the merge and the writers' batches both sort this way)."""
    return [(k, "ascending") for k in SORT_KEYS[name]]


def sort_order_sql(keys: tuple[str, ...]) -> str:
    """The same order as an ORDER BY list over ``keys`` (a table's ``SORT_KEYS``)."""
    return ", ".join(f'"{k}" ASC NULLS LAST' for k in keys)


def empty_table(name: str) -> pa.Table:
    """An empty table of the named schema."""
    return TABLES[name].empty_table()


def missing(value) -> bool:
    """None, NaN or pandas' NA: what a store column holds where nothing was given (a list or a
    mapping, read from a list column, is a value)."""
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
