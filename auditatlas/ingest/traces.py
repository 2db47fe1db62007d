"""Any trajectory agentpile recognizes: ATIF, an OpenAI message list or a Claude Code session.

``auditatlas ingest traces PATH --corpus NAME``: each file's format is detected as
``agentpile.load`` detects it (every reader asked; exactly one may say yes), never guessed: a
file no reader or several readers recognize is refused with one sentence naming it. Then it is
read exactly as ``ingest atif|messages|claude-code`` reads it (:mod:`.trajectory`).
"""
from __future__ import annotations

from pathlib import Path

from . import Batch, Context
from .trajectory import READERS, read_format, recognized, trajectory_files

FORMAT = "traces"


def can_read(path: Path) -> bool:
    files = trajectory_files(Path(path))
    return bool(files) and len(names := recognized(files[0][0])) == 1 and names[0] in READERS.values()


def read(path: Path | None, context: Context, corpus: str | None = None) -> Batch:
    return read_format(path, context, corpus, None)
