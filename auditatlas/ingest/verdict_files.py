"""Verdicts from a file: ``auditatlas ingest reviews FILE`` (CSV or Parquet).

The columns are those ``auditatlas reviews export`` writes (``data/README.md``, "verdicts"):
``run_id``, ``step_idx``, ``verdict`` (anomaly | normal | unsure) and ``reviewer`` are needed;
``corpus`` (default: the step's), ``reviewed_at`` (ISO 8601; no zone means UTC; default: now),
``failure_mode``, ``note``, ``queue``, ``seed`` and ``verdict_id`` (default: a new one) may be
given. Unlike the other formats the file does not replace a source: its verdicts are added to
the reviews source (``auditatlas.verdicts``), and ids already held are skipped, so an export
ingested twice adds nothing.

A file with any bad row, or a row naming a step the store does not hold, changes nothing: one
sentence per bad row, and one sentence naming every unknown step.
"""
from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import verdicts
from ..errors import IngestFailed, InputError, first_line
from . import Batch, Context
from .kit.csvfiles import read_csv

FORMAT = "reviews"
SUFFIXES = (".csv", ".parquet")
_SHOWN = 10  # unknown steps named before "and N more"
_KNOWN_SQL = """SELECT run_id, step_idx, corpus FROM steps
                WHERE list_contains(?, run_id)"""


def can_read(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in SUFFIXES


def read(path: Path, context: Context) -> Batch:
    """The verdicts of ``path``, every row checked against the file's rules and the store's
    steps (raises IngestFailed listing the problems). Not written by the caller: ``append``
    adds them (the registry line says ``appends``)."""
    rows, lines = _rows(path)
    if not rows:
        return Batch(source=verdicts.REVIEWS_SOURCE, tables={"verdicts": verdicts.table([])},
                     notes=["the file holds no verdicts; nothing was written."])
    # The corpus may be left out (it is the step's): checked once the steps are looked up.
    needed = [k for k in verdicts.REQUIRED if k != "corpus"]
    bad = verdicts.problems(rows, [f"line {n}" for n in lines], needed)
    if bad:
        raise IngestFailed([InputError(path, None, b) for b in bad])
    unknown = _fill_from_steps(rows, lines, context)
    if unknown:
        shown = ", ".join(unknown[:_SHOWN]) + (f" and {len(unknown) - _SHOWN} more" if len(unknown) > _SHOWN else "")
        raise IngestFailed([InputError(path, None, f"{len(unknown)} row(s) name a step the store does not hold: "
                                                   f"{shown}.")])
    for row in rows:
        row["reviewed_at"] = verdicts.normalise_time(row["reviewed_at"]) if row.get("reviewed_at") else verdicts.now_utc()
        row["queue"] = row.get("queue") or f"file {path.name}"
        row["verdict_id"] = row.get("verdict_id") or uuid.uuid4().hex
    return Batch(source=verdicts.REVIEWS_SOURCE, tables={"verdicts": verdicts.table(rows)})


def append(batch: Batch, store: Path, *, wait: bool = True, notify: Callable[[str], None] | None = None) -> dict:
    """Add the verdicts ``read`` returned to the store (under the lock; ids held already are skipped)."""
    rows = batch.tables["verdicts"].to_pylist()
    if not rows:
        return {"rows": {}}
    entry = verdicts.append_verdicts(store, rows, wait=wait, notify=notify)
    added = int(entry.get("added", 0))
    if added < len(rows):
        batch.notes.append(f"{len(rows) - added} verdict(s) of the file were held already and were skipped.")
    return entry


def _rows(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """The file's rows as dicts of Python values (step_idx and seed made whole numbers where
    they are), and the line each row ends on (a Parquet row: its number + 1, as if under a header)."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            data = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise IngestFailed([InputError(path, None, f"cannot be read as parquet ({first_line(exc)}).")]) from None
        names, rows = data.column_names, data.to_pylist()
        lines = [i + 2 for i in range(len(rows))]
    else:
        # Every column as text: a note "1" stays a note, a step_idx "x" is reported, not guessed.
        problems: list[InputError] = []
        read = read_csv(path, problems, what="a reviews CSV")
        if read is None:
            raise IngestFailed(problems)
        names, rows, lines = read.header, read.records(), read.lines
    missing = [c for c in ("run_id", "step_idx", "verdict", "reviewer") if c not in names]
    if missing:
        raise IngestFailed([InputError(path, None, f"has no column {', '.join(missing)} "
                                                   "(a reviews file has the columns `auditatlas reviews export` writes).")])
    for row in rows:
        for key in ("step_idx", "seed"):
            row[key] = _whole(row.get(key))
        for key, value in list(row.items()):
            if isinstance(value, str):
                row[key] = value.strip() or None
    return rows, lines


def _whole(value: Any) -> Any:
    """A whole number from text or a number; anything else as it was (reported by the checks)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return None
        try:
            return int(text)
        except ValueError:
            return text
    return value


def _fill_from_steps(rows: list[dict[str, Any]], lines: list[int], context: Context) -> list[str]:
    """Give each row its step's corpus where it names none; the rows naming no stored step."""
    runs = sorted({str(r["run_id"]) for r in rows})
    held = context.lookup(_KNOWN_SQL, [runs])
    if not isinstance(held, pa.Table):
        held = pa.Table.from_pandas(held, preserve_index=False)
    corpus_of = {(r["run_id"], r["step_idx"]): r["corpus"] for r in held.to_pylist()}
    unknown = []
    for i, row in enumerate(rows):
        key = (str(row["run_id"]), row["step_idx"])
        if key not in corpus_of:
            unknown.append(f"run {key[0]} step {key[1]} (line {lines[i]})")
        elif not row.get("corpus"):
            row["corpus"] = corpus_of[key]
    return unknown
