"""The opening of a small release read whole (Who&When, tau-bench): every JSON file under the
path read into runs, duplicates named, and the rule that an empty release never replaces a
loaded source. The format supplies how one file becomes runs and what makes a run a duplicate.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from ...errors import IngestFailed, InputError
from .jsonfiles import json_files

Run = TypeVar("Run")


def read_runs(path: Path | None, name: str, read_file: Callable[[Path, list[InputError]], Iterable[Run]],
              check_unique: Callable[[list[Run], list[InputError]], None]) -> list[Run]:
    """The runs of every ``.json`` file under ``path``, or :class:`IngestFailed` listing every
    problem. ``name`` is the format as a user knows it ("Who&When"); ``read_file`` appends a
    file's problems and returns its runs."""
    if path is None:
        raise IngestFailed([InputError("(none)", None, f"{name} needs a file or folder to read.")])
    path = Path(path)
    files = json_files(path)
    problems: list[InputError] = []
    if not files:
        problems.append(InputError(path, None, "no .json files were found here."))
    runs = [run for f in files for run in read_file(f, problems)]
    check_unique(runs, problems)
    if not runs and not problems:  # never replace a loaded source with an empty one
        problems.append(InputError(path, None, f"holds no {name} run; the loaded source was kept."))
    if problems:
        raise IngestFailed(problems)
    return runs
