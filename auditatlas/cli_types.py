"""Argument types shared by every subcommand: a bad number is one sentence from argparse."""
from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type accepting whole numbers >= ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"must be at least {minimum}" if minimum > 0 else f"must be a whole number >= {minimum}, not {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


positive_int = whole_number(1)  # counts of things that must exist: rooms
count = whole_number(0)  # seeds, and worker counts (ingest, demo), where 0 means "this process only"


def positive_seconds(text: str) -> float:
    """A time in seconds, more than 0 (``receive --idle``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return value


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port, said on the first line)."""
    value = count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, not {value}")
    return value
