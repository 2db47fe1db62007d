"""Errors a user can cause, each carrying one clear sentence naming the file and field."""
from __future__ import annotations

from pathlib import Path


def first_line(exc: BaseException) -> str:
    """An exception's first line (its type's name when it says nothing): how a library's error
    is quoted inside one of our sentences."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class AtlasError(Exception):
    """Base for errors that reach the user as one sentence (never a traceback)."""


class InputError(AtlasError):
    """A release file that cannot be read into the schema."""

    def __init__(self, file: str | Path, field: str | None, message: str) -> None:
        self.file = str(file)
        self.field = field
        self.message = message
        where = f"{self.file}: field '{field}'" if field else self.file
        super().__init__(f"{where}: {message}")


class IngestFailed(AtlasError):
    """One or more input problems; nothing was written."""

    def __init__(self, problems: list[InputError]) -> None:
        self.problems = problems
        lines = [str(p) for p in problems]
        super().__init__(
            f"{len(problems)} problem(s); the store was left unchanged:\n" + "\n".join(lines)
        )


class StoreError(AtlasError):
    """The store is missing, unreadable, or a write would break an invariant."""


class UndefinedMetric(AtlasError):
    """A metric that has no value on this slice (e.g. ROC-AUC with one class)."""


class StoreBusy(StoreError):
    """Another writer holds the store lock and the caller asked not to wait."""
