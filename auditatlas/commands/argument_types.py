"""Argument types shared by every subcommand: a bad number or slice is one sentence."""
from __future__ import annotations

import argparse
from collections.abc import Callable

from ..errors import AtlasError
from ..slice_and_labels import SLICE_COLUMNS as SLICE_KEYS


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


def number_at_least(text: str, low: float, what: str, bound: str, above: bool = False) -> float:
    """A finite number >= ``low`` (> ``low`` with ``above``), else argparse's sentence: ``what``
    names the value ('a number of seconds'), ``bound`` the range ('a number of seconds above 0')."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {what}") from None
    if not (value > low if above else value >= low) or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be {bound}, not {text}")
    return value


def positive_seconds(text: str) -> float:
    """A time in seconds, more than 0 (``receive --idle``)."""
    return number_at_least(text, 0.0, "a number of seconds", "a number of seconds above 0", above=True)


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port, said on the first line)."""
    value = count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, not {value}")
    return value


def parse_slice(items: list[str]) -> dict[str, list]:
    """``["backbone=GPT-4.1", "difficulty=easy", "difficulty=hard"]`` -> the shared slice dict."""
    out: dict[str, list] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value:
            raise AtlasError(f"--slice '{item}' is not KEY=VALUE.")
        if key not in SLICE_KEYS:
            raise AtlasError(f"--slice key '{key}' is not a slice column; use one of: {', '.join(SLICE_KEYS)}.")
        if key == "temperature":
            try:
                value = float(value)
            except ValueError:
                raise AtlasError(f"--slice temperature={value!r} is not a number.") from None
        out.setdefault(key, []).append(value)
    return out


def non_negative(text: str) -> float:
    """A number >= 0 (a price, a budget)."""
    return number_at_least(text, 0.0, "a number", "a number >= 0")


def positive_number(text: str) -> float:
    """A number above 0 (seconds, a cost)."""
    value = non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def share(text: str) -> float:
    """A share above 0 and at most 1 (a sampling rate)."""
    value = positive_number(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a share above 0 and at most 1, not {text}")
    return value
