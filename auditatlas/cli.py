"""``auditatlas``: the command line's entry point. The subcommands are declared in
``auditatlas.commands`` (one module per group); this module parses, refuses a broken store to a
command that reads all of it, runs the command, turns what a user can cause into one sentence,
and after a write builds what the store's new version keeps (``after_write``).

Every error a user can cause ends in one clear sentence on stderr and a non-zero exit, never a
traceback: 2 for bad usage, 1 for bad input or an undefined result.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import after_write
from .commands import add_parsers, say
from .errors import AtlasError, IngestFailed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auditatlas",
        description="Audit Atlas: labeled agent traces and detector predictions in one store.",
    )
    parser.add_argument("--store", help="store folder (default: $AUDITATLAS_STORE or ./data/store)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .store import store_dir

    root = store_dir(args.store)
    writes = getattr(args, "writes", False)
    from .phases import Phase

    write = Phase("the write") if writes else None
    code = _command(args, root)
    if code == 0 and write is not None:
        say(write.told())  # only for a write that landed: a refused one is its one sentence
    if code == 0 and writes and not _adds_verdicts(args):
        after_write.after_write(root, say, warn=lambda line: print(f"warning: {line}", file=sys.stderr))
    return code


def _adds_verdicts(args: argparse.Namespace) -> bool:
    """An ingest that only adds verdicts: no derived table reads them (queries/views.py), so
    there is nothing to build after it."""
    from .commands.store_commands import adds_verdicts

    return adds_verdicts(args)


def _command(args: argparse.Namespace, root: Path) -> int:
    if getattr(args, "reads", False) and _refuse_broken(root):
        return 1
    try:
        return args.run(args, root)
    except IngestFailed as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"error: {len(exc.problems)} problem(s); the store was left unchanged.", file=sys.stderr)
        return 1
    except AtlasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - only a failure of the store (or a file) is turned into a sentence
        sentence = _unreadable(root, exc)
        if sentence is None:
            raise
        print(f"error: {sentence}", file=sys.stderr)
        return 1


def _refuse_broken(root: Path) -> bool:
    """Print one sentence per reason the store cannot be read; whether there was one."""
    from .store import health

    problems = health(root, deep=True)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return bool(problems)


def _unreadable(root: Path, exc: Exception) -> str | None:
    """One sentence for an OS or DuckDB error a broken store (or an unreadable file) caused;
    None for anything else (a bug, which keeps its traceback)."""
    from .store import health

    duck = type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb")
    if not (duck or isinstance(exc, OSError)):
        return None
    problems = health(root, deep=True)
    if problems:
        return " ".join(problems)
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename} cannot be read ({exc.strerror or exc}); check its permissions."
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
