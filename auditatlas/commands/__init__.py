"""The subcommands of ``auditatlas``, one module per group, declared in ``MODULES``.

Each module's ``add_parsers(sub)`` adds its subcommands and sets on each parser what the entry
point (``auditatlas.cli``) needs to run it: ``run(args, root) -> exit code``, ``reads`` (it
answers from the whole store, so a store with a source it cannot read is refused first) and
``writes`` (what a write keeps for the new version is built after it lands, ``after_write``).
Adding a subcommand is its module plus one name here.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# In the order ``auditatlas --help`` lists them.
MODULES: tuple[str, ...] = ("store_commands", "board_commands", "review_commands", "detector_commands",
                            "judge_commands", "pattern_commands", "search_commands", "tour_commands")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}").add_parsers(sub)


def say(message: str) -> None:
    """A note on stderr (results go to stdout)."""
    print(f"note: {message}", file=sys.stderr)
