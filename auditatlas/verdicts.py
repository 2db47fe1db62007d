"""Reviewers' verdicts on steps: a label process of its own, kept as an append-only table.

Where they live: the store source ``reviews``, whose ``verdicts`` table gets one new Parquet
part per write. A write takes the store lock, carries the parts the source holds now (hard
links: a committed part never changes), adds its own part and switches the source in with the
manifest, exactly as any source is written (``store.SourceWriter``). So the manifest switch is
the commit: a reader sees every verdict of a write or none, a failed write leaves the store as
it was, and two reviewers writing at once each carry the other's verdicts (the lock orders
them), so nothing is lost. Why not a folder of its own outside the manifest: every reader of
the store (the query layer's versions, the app's cache) keys on the manifest, so a verdict
written elsewhere would not be seen until some other write.

Nothing is ever updated: revising a verdict appends a new row, and the latest per step counts
(``queries/sql/reviewed_labels.sql``); the history stays. When the source holds many small
parts a write merges them into one (same rows), so the views never list thousands of files.
"""
from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from .errors import AtlasError
from .schema import TABLES
from .store import REVIEWS_SOURCE
from .store_appends import appending, read_part


class BadVerdict(AtlasError):
    """A verdict that cannot be stored (one sentence per row); nothing was written."""


VERDICTS: tuple[str, ...] = ("anomaly", "normal", "unsure")
# The label each verdict gives a step (unsure leaves it undecided).
VERDICT_LABEL: dict[str, int | None] = {"anomaly": 1, "normal": 0, "unsure": None}
REQUIRED = ("corpus", "run_id", "step_idx", "verdict", "reviewer")
TEXT_LIMIT = 10_000  # characters of a note or failure mode kept (a verdict is not a document)
NAME_LIMIT = 200  # characters of a reviewer's name: a name, never a document
# A verdict's time is after any release this tool reads and not past tomorrow: a time in 9999
# would stay the step's latest verdict for good, whatever is given later.
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def now_utc() -> str:
    """The time a verdict is given: UTC, ISO 8601 with microseconds (fixed width, so it sorts)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def verdict(corpus: str, run_id: str, step_idx: int, value: str, reviewer: str, *,
            failure_mode: str | None = None, note: str | None = None, queue: str | None = None,
            seed: int | None = None, reviewed_at: str | None = None) -> dict[str, Any]:
    """One verdict row, given now (unless ``reviewed_at``), with a new id."""
    return {"verdict_id": uuid.uuid4().hex, "corpus": corpus, "run_id": run_id, "step_idx": step_idx,
            "verdict": value, "failure_mode": failure_mode or None, "note": note or None,
            "reviewer": reviewer, "reviewed_at": reviewed_at or now_utc(), "queue": queue, "seed": seed}


def problems(rows: Sequence[Mapping[str, Any]], where: Sequence[str] | None = None,
             required: Sequence[str] = REQUIRED) -> list[str]:
    """One sentence per row that cannot be stored (``where[i]`` names row i, e.g. its line)."""
    found = []
    for i, row in enumerate(rows):
        name = where[i] if where else f"verdict {i + 1}"
        missing = [k for k in required if _blank(row.get(k))]
        if missing:
            found.append(f"{name}: no {', '.join(missing)}.")
            continue
        if row["verdict"] not in VERDICTS:
            found.append(f"{name}: verdict '{row['verdict']}' is not one of {', '.join(VERDICTS)}.")
        step = row["step_idx"]
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            found.append(f"{name}: step_idx '{step}' is not a step number (0, 1, 2, …).")
        reviewer = str(row["reviewer"])
        if len(reviewer) > NAME_LIMIT or _CONTROL.search(reviewer):
            found.append(f"{name}: reviewer '{_shown(reviewer)}' is not a name (at most {NAME_LIMIT} characters, "
                         "no control characters).")
        at = row.get("reviewed_at")
        if not _blank(at):
            moment = _utc(str(at))
            if moment is None:
                found.append(f"{name}: reviewed_at '{_shown(str(at))}' is not a time (ISO 8601, e.g. "
                             "2026-01-31T12:00:00Z).")
            elif not EARLIEST <= moment <= datetime.now(timezone.utc) + timedelta(days=1):
                found.append(f"{name}: reviewed_at '{_shown(str(at))}' is not a plausible time (from 2000 to "
                             "tomorrow); a verdict's time says when it was given.")
    return found


def _shown(text: str) -> str:
    text = _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)
    return text if len(text) <= 60 else f"{text[:60]}… ({len(text):,} characters)"


def normalise_time(text: str) -> str:
    """``text`` (an ISO 8601 time; no zone means UTC) in the stored form."""
    moment = _utc(text)
    if moment is None:
        raise BadVerdict(f"'{text}' is not a time (ISO 8601).")
    return moment.isoformat(timespec="microseconds")


def _utc(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == ""


# What makes two rows one verdict: every column (an id held with other content is a conflict).
_CONTENT = ("verdict_id", "corpus", "run_id", "step_idx", "verdict", "failure_mode", "note", "reviewer",
            "reviewed_at", "queue", "seed")


def _content(row: Mapping[str, Any]) -> tuple:
    return tuple(row.get(k) for k in _CONTENT)


def table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Verdict rows as the store's ``verdicts`` table (texts capped at TEXT_LIMIT)."""
    schema = TABLES["verdicts"]
    rows = list(rows)
    columns = {}
    for f in schema:
        values = [row.get(f.name) for row in rows]
        if f.name in ("note", "failure_mode"):
            values = [None if _blank(v) else str(v)[:TEXT_LIMIT] for v in values]
        columns[f.name] = pa.array(values, type=f.type)
    return pa.table(columns, schema=schema)


def append_verdicts(root: str | Path, rows: Sequence[Mapping[str, Any]], *, wait: bool = True,
                    notify: Callable[[str], None] | None = None, compact_at: int | None = None) -> dict:
    """Add ``rows`` (see :func:`verdict`) to the store's verdicts, atomically; returns the
    reviews source's manifest entry. Rows whose ``verdict_id`` is held already are skipped (an
    export ingested twice adds nothing). Raises BadVerdict (nothing written) on a bad row."""
    bad = problems(rows)
    if bad:
        raise BadVerdict(" ".join(bad))
    # One stored form of the time, so the latest verdict is the one that sorts last; every row an id.
    rows = [{**r, "reviewed_at": normalise_time(str(r["reviewed_at"])) if not _blank(r.get("reviewed_at")) else now_utc(),
             "verdict_id": r.get("verdict_id") or uuid.uuid4().hex} for r in rows]
    with appending(root, REVIEWS_SOURCE, "verdicts", wait=wait, notify=notify, compact_at=compact_at) as (writer, held):
        known: dict[str, tuple] = {}
        for part in held:
            for old in read_part(part, "verdicts", list(_CONTENT)).to_pylist():
                known[old["verdict_id"]] = _content(old)
        new, conflicts = [], []
        for row in rows:  # an id given twice in one write is one verdict too
            content = _content(table([row]).to_pylist()[0])
            if row["verdict_id"] not in known:
                known[row["verdict_id"]] = content
                new.append(row)
            elif known[row["verdict_id"]] != content:
                conflicts.append(row["verdict_id"])
        if conflicts:
            shown = ", ".join(conflicts[:5]) + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
            raise BadVerdict(f"{len(conflicts)} verdict id(s) are held already with other content: {shown}; a verdict "
                             "is never changed, give the revision a new id.")
        if new:
            writer.append({"verdicts": table(new)})
        return writer.commit({"format": "reviews", "origin": "verdicts", "added": len(new)})

