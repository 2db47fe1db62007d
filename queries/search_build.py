"""``python -m queries.search_build STORE [ERRORS]``: build the search index of the store's
current version in a process of its own (the app starts it when it finds no index:
``queries.search``).

At low priority (``nice``): the app's sessions beside it come first. Exit 0 when the index is
there (built here, or by the process that held its build lease), 1 with one line on standard
error when the build failed: the app says that line instead of "being built". ``ERRORS`` is the
file the app sent standard error to; removed on success, so a build nobody asked about again
leaves no file behind.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

NICENESS = 10


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m queries.search_build STORE [ERRORS]", file=sys.stderr)
        return 2
    try:
        os.nice(NICENESS)
    except OSError:
        pass  # not allowed here: build at the app's priority
    from auditatlas.search import index as search_index
    from auditatlas.store import read_manifest

    from .search import BUILD_ERRORS, build_index, first_line

    root = Path(args[0])
    try:
        build_index(root, read_manifest(root))
    except search_index.Busy:
        pass  # another process holds the build: its index is on the way
    except BUILD_ERRORS as exc:
        print(f"error: {first_line(exc)}", file=sys.stderr)
        return 1
    if len(args) == 2:
        Path(args[1]).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
