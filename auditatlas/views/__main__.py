"""``python -m auditatlas.views --readme``: print the README's "Pages and links" block
(``--write README.md`` rewrites it in place)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .readme import section, update


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m auditatlas.views", description=__doc__)
    parser.add_argument("--readme", action="store_true", help="print the generated block")
    parser.add_argument("--write", type=Path, metavar="README", help="rewrite the block in this file")
    args = parser.parse_args(argv)
    if args.write:
        print(f"{args.write}: {'updated' if update(args.write) else 'already up to date'}")
        return 0
    if args.readme:
        print(section())
        return 0
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
