"""The command line called in this process: what a user sees (exit code, stdout, stderr).

A new interpreter per call costs 1 to 1.5 CPU-seconds of imports (pandas, DuckDB, pyarrow),
and the suite makes about a hundred such calls. In this process a call costs what the command
does. An exception the command does not turn into a sentence still fails the test (it rises
here instead of printing a traceback). Tests where the process is the point (the lock across
processes, kill -9, the ``python -m`` entry point itself) keep a real subprocess.
"""
from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Done:
    """What a finished command left: the fields of ``subprocess.CompletedProcess`` the tests read."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _within(cwd: Path | None, env: Mapping[str, str] | None) -> Iterator[None]:
    # Only the variables given are set and put back: other threads of this process (a Dask
    # client, an AppTest script) keep reading the environment meanwhile.
    old_cwd = os.getcwd()
    before = {name: os.environ.get(name) for name in (env or {})}
    try:
        if cwd is not None:
            os.chdir(cwd)
        os.environ.update(env or {})
        yield
    finally:
        os.chdir(old_cwd)
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_cli(*argv: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Done:
    """``auditatlas ARGV...`` as the console script runs it, in this process."""
    from auditatlas.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _within(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors, and any sys.exit on the way
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=err)
    return Done(int(code or 0), out.getvalue(), err.getvalue())
