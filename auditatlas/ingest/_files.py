"""File helpers shared by the JSON adapters: finding release files and reading one safely.

Reading problems are collected as InputError (file named, one sentence each) instead of
raised, so an adapter can report every bad file of a folder at once.

What "safely" covers, because each of these once ended in a traceback or a silent skip:

- a UTF-8 byte-order mark is accepted (Windows editors write one; the CSV reader accepts it too);
- a file holding only ``null`` is a problem, not "nothing to read" (it used to vanish);
- nesting deeper than :data:`MAX_DEPTH` is refused up front: Python's JSON parser and encoder
  recurse, so a deep document fails either while parsing or later, while a run key or an
  ``extra`` column is encoded; no release nests beyond about ten levels;
- a lone UTF-16 surrogate (``"\\ud800"``) parses but is not Unicode text: it cannot be hashed
  as UTF-8 or written to Parquet, so it is reported with the field that holds it;
- an integer literal longer than Python's 4,300-digit limit raises ValueError, not a
  JSONDecodeError, and is reported like any other parse failure.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import InputError

MAX_DEPTH = 100  # arrays/objects inside each other; real releases stay under 12
SHOWN_CHARS = 60  # how much of an offending value an error line quotes

# A JSON escape of a UTF-16 surrogate; only then can a parsed string hold a lone one (an
# encoded surrogate fails UTF-8 decoding, and a valid escaped pair is joined by the parser).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_files(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.json`` below it (hidden folders skipped), sorted."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found = (p for p in path.rglob("*.json") if p.is_file())
    return sorted(p for p in found if not any(part.startswith(".") for part in p.relative_to(path).parts))


def load_json(file: Path, problems: list[InputError], expected: str = "a JSON object or list") -> Any | None:
    """The parsed file, or None with the reason appended to ``problems``.

    ``expected`` names what the format wants in the file, for the message about a bare ``null``.
    """
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        problems.append(InputError(file, None, f"cannot be read ({exc.strerror or exc})."))
        return None
    except UnicodeDecodeError as exc:
        problems.append(InputError(file, None, f"is not UTF-8 text (byte {exc.start} cannot be decoded)."))
        return None
    return parse_json_text(text, file, problems, expected)


def parse_json_text(text: str, file: str | Path, problems: list[InputError],
                    expected: str = "a JSON object or list") -> Any | None:
    """``text`` parsed and checked (depth, lone surrogates, bare null); None after a problem."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        problems.append(InputError(file, None, "is empty."))
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(InputError(file, None, f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."))
        return None
    except RecursionError:
        problems.append(InputError(file, None, f"nests arrays or objects more than {MAX_DEPTH} levels deep; "
                                               "no release is shaped like that."))
        return None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        problems.append(InputError(file, None, f"is not valid JSON ({first_line(exc)})."))
        return None
    if value is None:
        problems.append(InputError(file, None, f"holds only JSON null; expected {expected}."))
        return None
    problem = check_value(value, file, surrogates=bool(_SURROGATE_ESCAPE.search(text)))
    if problem is not None:
        problems.append(problem)
        return None
    return value


def check_value(value: Any, file: str | Path, surrogates: bool = True) -> InputError | None:
    """The first field nested deeper than MAX_DEPTH, or (``surrogates``) holding a lone surrogate.

    Iterative, so it cannot itself run out of stack; callers pass ``surrogates=False`` when the
    raw text holds no surrogate escape, which is almost always.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                return _too_deep(file, where)
            for key, child in node.items():
                if surrogates and _LONE_SURROGATE.search(key):
                    return _surrogate_error(file, where or None, key, "a key")
                stack.append((child, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                return _too_deep(file, where)
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(node))
        elif surrogates and isinstance(node, str) and _LONE_SURROGATE.search(node):
            return _surrogate_error(file, where or None, node, "its text")
    return None


def _too_deep(file: str | Path, where: str) -> InputError:
    # The path down to the limit is a hundred steps long: its start says which field it is.
    field = where if len(where) <= 60 else where[:60] + "…"
    return InputError(file, field or None, f"nests arrays or objects more than {MAX_DEPTH} levels deep; "
                                           "no release is shaped like that.")


def has_surrogate_escape(raw: bytes) -> bool:
    """Whether raw JSON bytes hold a ``\\uD8xx``-``\\uDFxx`` escape (a cheap pre-check)."""
    return bool(_SURROGATE_ESCAPE_BYTES.search(raw))


def _surrogate_error(file: str | Path, field: str | None, text: str, what: str) -> InputError:
    char = _LONE_SURROGATE.search(text)[0]
    return InputError(file, field, f"{what} holds a lone UTF-16 surrogate (\\u{ord(char):04x}), which is not "
                                   "Unicode text; fix the escape in the file.")


def show(value: Any) -> str:
    """``repr(value)`` cut to a readable length, so one huge field never floods an error line."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def first_json(path: Path) -> Any | None:
    """The first JSON file under ``path``, parsed, for a cheap ``can_read``; None if none reads."""
    try:
        files = json_files(Path(path))
        return json.loads(files[0].read_bytes().decode("utf-8-sig")) if files else None
    except (OSError, ValueError, RecursionError):
        return None
