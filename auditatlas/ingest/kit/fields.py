"""Field checks shared by the adapters: each reports a wrong value as one InputError naming the
file and the field, and quotes the value at a readable length.

The typed getters (``object_field``, ``string_field``, ``number_field``, ``count_field``) take
``(value, file, field, problems)`` and return the value, or None after appending the problem,
so a converter reads a whole record and reports every bad field of it at once. Each tests the
common, valid case first: they run several times per step of a large release.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...errors import InputError, first_line  # noqa: F401 - first_line is part of the kit

SHOWN_CHARS = 60  # how much of an offending value an error line quotes
MAX_INT64 = 2**63  # counts, indices and seeds must fit the store's int64 columns

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
               float: "number", type(None): "null"}


def show(value: Any) -> str:
    """``repr(value)`` cut to a readable length, so one huge field never floods an error line."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def json_type(value: Any) -> str:
    """What JSON calls the type of a parsed value ("object", "array", "number"...)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def is_int(value: Any) -> bool:
    """A JSON integer (``True`` is an int to Python, not to a release)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_count(value: Any) -> bool:
    """A whole number the store's int64 columns can hold as a count or index (0 up to 2**63 - 1)."""
    return is_int(value) and 0 <= value < MAX_INT64


def object_field(value: Any, file: str | Path, field: str, problems: list[InputError]) -> dict | None:
    if value is None or isinstance(value, dict):
        return value
    problems.append(InputError(file, field, f"must be an object, got a JSON {json_type(value)}."))
    return None


def string_field(value: Any, file: str | Path, field: str, problems: list[InputError]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    problems.append(InputError(file, field, f"must be a string, got a JSON {json_type(value)}."))
    return None


def number_field(value: Any, file: str | Path, field: str, problems: list[InputError],
                 low: float | None = None, high: float | None = None) -> float | None:
    """A finite number within [low, high]; NaN, infinities and out-of-range values are reported.

    (``json`` reads ``NaN``/``Infinity`` literals and huge exponents without complaint, and a NaN
    temperature would otherwise reach the sidebar as an option "nan".)
    """
    if type(value) is float and value - value == 0.0 \
            and (low is None or value >= low) and (high is None or value <= high):
        return value  # the common case first (x - x is 0 iff x is finite)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.append(InputError(file, field, f"must be a number, got {show(value)}."))
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        number = math.inf
    if not math.isfinite(number):
        problems.append(InputError(file, field, f"must be a finite number, got {show(value)}."))
        return None
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = f"between {low:g} and {high:g}" if low is not None and high is not None else (
            f"at least {low:g}" if low is not None else f"at most {high:g}")
        problems.append(InputError(file, field, f"must be {bounds}, got {show(value)}."))
        return None
    return number


def count_field(value: Any, file: str | Path, field: str, problems: list[InputError]) -> int | None:
    """A count (token counts): a whole number from 0 up to what a 64-bit column holds."""
    kind = type(value)
    if kind is int and 0 <= value < MAX_INT64:
        return value
    if value is None:
        return None
    if kind is float and value.is_integer() and 0 <= value < MAX_INT64:
        return int(value)  # 812.0 is a count; 812.5, NaN and 1e300 are not
    problems.append(InputError(file, field, f"must be a count (a whole number >= 0, below 2**63), got {show(value)}."))
    return None


# Fields of the i-th item of a list (a trace's steps): the hot path of a large ingest, so the
# common case returns at once and the name ``<items>[i].<field>`` is built only for a problem.

def object_at(value: Any, file: str | Path, items: str, i: int, field: str, problems: list[InputError]) -> dict | None:
    if value is None or type(value) is dict:
        return value
    return object_field(value, file, f"{items}[{i}].{field}", problems)


def count_at(value: Any, file: str | Path, items: str, i: int, field: str, problems: list[InputError]) -> int | None:
    if value is None or (type(value) is int and 0 <= value < MAX_INT64):
        return value
    return count_field(value, file, f"{items}[{i}].{field}", problems)


def number_at(value: Any, file: str | Path, items: str, i: int, field: str, problems: list[InputError],
              low: float | None) -> float | None:
    if value is None or (type(value) is float and value - value == 0.0 and (low is None or value >= low)):
        return value
    return number_field(value, file, f"{items}[{i}].{field}", problems, low=low)
