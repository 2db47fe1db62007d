"""A table's CSV form, the same in the app's downloads and in an export.

The CSV keeps every value, but a text cell that a spreadsheet would run as a formula (starting
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading apostrophe, so
opening the download never executes a trace's text.
"""
from __future__ import annotations

import re

import pandas as pd

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FILE_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with text cells that a spreadsheet would evaluate defused (numbers untouched)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v)
    return out


def file_name(key: str) -> str:
    """A download name from a key that may hold data (a corpus name): letters, digits, . _ - only."""
    return (_FILE_NAME_BAD.sub("_", key).strip("._") or "table") + ".csv"
