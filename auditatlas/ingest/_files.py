"""File helpers shared by the JSON adapters: finding release files and reading one safely.

Reading problems are collected as InputError (file named, one sentence each) instead of
raised, so an adapter can report every bad file of a folder at once.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError


def json_files(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.json`` below it (hidden folders skipped), sorted."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found = (p for p in path.rglob("*.json") if p.is_file())
    return sorted(p for p in found if not any(part.startswith(".") for part in p.relative_to(path).parts))


def load_json(file: Path, problems: list[InputError]) -> Any | None:
    """The parsed file, or None with the reason appended to ``problems``."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(InputError(file, None, f"cannot be read as UTF-8 text ({exc})."))
        return None
    if not text.strip():
        problems.append(InputError(file, None, "is empty."))
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(InputError(file, None, f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."))
        return None


def first_json(path: Path) -> Any | None:
    """The first JSON file under ``path``, parsed, for a cheap ``can_read``; None if none reads."""
    try:
        files = json_files(Path(path))
        return json.loads(files[0].read_text(encoding="utf-8")) if files else None
    except (OSError, ValueError):
        return None
