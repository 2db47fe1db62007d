"""A short label that tells runs apart in a list; the full run id stays beside it for copying.

A run id is ``<corpus>:<native id>``, and a list shows many runs of one corpus, so the id's
head reads the same on every row: a MAADBench id starts with its run folder (date, domain,
tool mode, backbone, temperature), and a column cut to its width shows only that. The label
keeps what tells one run from the next:

- MAADBench-format ids (``<run folder>/<end time>_EscapeRoom_<room id>_<escaped|failed>``):
  the room id, the difficulty, the outcome word and the time the room ended, e.g.
  ``room_0014 · hard · failed · 2026-03-02 08:04``. The backbone is left out: lists show it in
  a column of its own. The difficulty is a run column, not part of the id (only a nightmare
  run folder says so), so it is passed in when the list has it.
- A run that carries a name (a trace of your own: its root span's name and start time, written
  by the OTLP adapter into the run's extra, read by the ``run_names`` query): that name.
- Any other id (Who&When ``Algorithm-Generated/12``, tau-bench ``gpt-4o-airline.trials01/46-1``,
  a user's own): the native id, which is short and already ends in what tells runs apart;
  one longer than :data:`LABEL_CHARS` keeps its tail.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

LABEL_CHARS = 48
SEPARATOR = " · "
_ROOM_FILE = re.compile(r"^(?P<ended>\d{14})_EscapeRoom_(?P<room>.+)_(?P<outcome>escaped|failed)$")
_NIGHTMARE_FOLDER = "_nightmare"


def run_label(run_id: Any, difficulty: Any = None, name: Any = None) -> str:
    """The short label of ``run_id`` (``difficulty``: the run's, when known; blank or NaN = not;
    ``name``: the name the run carries, when it has one)."""
    if not isinstance(run_id, str):
        return ""
    if _text(name):  # a long one keeps its tail: the start time tells one run from the next
        return _tail(str(name))
    native = run_id.split(":", 1)[1] if ":" in run_id else run_id
    return _room_label(native, _text(difficulty)) or _tail(native)


def _room_label(native: str, difficulty: str | None) -> str | None:
    folder, _, name = native.rpartition("/")
    match = _ROOM_FILE.match(name)
    if match is None:
        return None
    if difficulty is None and folder.endswith(_NIGHTMARE_FOLDER):
        difficulty = "nightmare"
    ended = match["ended"]
    when = f"{ended[:4]}-{ended[4:6]}-{ended[6:8]} {ended[8:10]}:{ended[10:12]}"
    return SEPARATOR.join(part for part in (match["room"], difficulty, match["outcome"], when) if part)


def _tail(native: str) -> str:
    if len(native) <= LABEL_CHARS:
        return native
    return "…" + native[-(LABEL_CHARS - 1):]


def _text(value: Any) -> str | None:
    """A difficulty as text, or None for a missing one (None, NaN, pandas NA, blank)."""
    if isinstance(value, str):
        return value or None
    return None


def label_first(frame: pd.DataFrame, difficulty: Iterable[Any] | None = None,
                names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A list whose ``run`` column holds full ids, as every run table shows it: the label first
    (what the reader picks by), the full id last as ``run_id``; ``names``: the names runs carry
    (``names_of``)."""
    ids = frame["run"].to_numpy()
    difficulty = list(difficulty) if difficulty is not None else [None] * len(ids)
    names = names or {}
    shown = frame.drop(columns="run")
    shown.insert(0, "run", [run_label(r, d, names.get(r)) for r, d in zip(ids, difficulty)])
    shown["run_id"] = ids
    return shown


def row_label(run: Mapping[str, Any]) -> str:
    """The label of a run read whole (a ``runs`` row: its id, difficulty and the extra holding
    the name it may carry)."""
    import json

    name = None
    extra = run.get("extra")
    if isinstance(extra, str) and extra:
        try:
            found = json.loads(extra)
        except ValueError:
            found = None
        name = found.get("run_name") if isinstance(found, dict) else None
    return run_label(run.get("run_id"), run.get("difficulty"), name)


def names_of(query: Callable[..., pd.DataFrame], run_ids: Iterable[Any]) -> dict[str, str]:
    """The names the runs ``run_ids`` carry (only those that carry one): one query for a list's page."""
    ids = sorted({str(r) for r in run_ids if isinstance(r, str)})
    if not ids:
        return {}
    found = query("run_names", {"run_ids": ids})
    return dict(zip(found["run_id"].astype(str), found["run_name"].astype(str)))
