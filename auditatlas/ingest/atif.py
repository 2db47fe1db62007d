"""ATIF trajectories (``.json``: one trajectory or a list; ``.jsonl``: one per line, v1.7),
read by agentpile's ATIF reader.

``auditatlas ingest atif PATH --corpus NAME``: every file under PATH becomes corpus
NAME (also its store source). Reading and refusals: :mod:`.trajectory`; the mapping: :mod:`.trajectory_mapping`.
"""
from __future__ import annotations

from pathlib import Path

from . import Batch, Context
from .trajectory import can_read as _can_read
from .trajectory import read_format

FORMAT = "atif"


def can_read(path: Path) -> bool:
    return _can_read(Path(path), FORMAT)


def read(path: Path | None, context: Context, corpus: str | None = None) -> Batch:
    return read_format(path, context, corpus, FORMAT)
