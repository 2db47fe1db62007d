"""Finding release JSON files and reading one safely: the one JSON reader of every adapter.

Reading problems are collected as InputError (file named, one sentence each) instead of
raised, so an adapter can report every bad file of a folder at once.

Parsing: ``orjson`` first (about 2x faster on release files), ``json`` as the reference for
whatever orjson refuses (NaN literals, lone surrogates, deep nesting, integers it cannot hold):
``json`` then accepts the text as it always did or raises the error the user is shown, so an
error sentence never depends on which parser ran.

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

Every adapter reads its JSON, JSONL and gzip input here: :func:`read_raw` (a file's bytes,
gzip inflated in a stream and refused past :data:`~.compressed.MAX_INFLATED_BYTES`),
:func:`decode_text` (UTF-8, a byte-order mark accepted) and :func:`parse_documents` (one
document, or one per line), each problem one sentence naming the file (and the line).

Two readers of a whole release file share all of this. :func:`load_json` checks a whole release file (UTF-8 first,
then depth and surrogates over the parsed value). :func:`load_object` is the hot path of a
format with one object per file and 10^5 files or more (MAADBench): it leaves decoding to the
parser and walks the value only when the raw bytes hold a surrogate escape, and it words its
problems in the format's own terms.
"""
from __future__ import annotations

import codecs
import gzip
import json
import math
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import orjson

from ...errors import InputError
from .compressed import TooLarge, read_maybe_gzip
from .fields import first_line, json_type

MAX_DEPTH = 100  # arrays/objects inside each other; real releases stay under 12

# A JSON escape of a UTF-16 surrogate; only then can a parsed string hold a lone one (an
# encoded surrogate fails UTF-8 decoding, and a valid escaped pair is joined by the parser).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# orjson reads an integer beyond 64 bits as a float where ``json`` keeps it exact; the
# shortest such literal (below -2**63) has 19 digits, so text with a run of 19 goes to ``json``.
_LONG_DIGITS = re.compile(r"\d{19}")
_LONG_DIGITS_BYTES = re.compile(rb"\d{19}")


class Readable(Protocol):
    """A release file: a ``Path`` or an ``importlib.resources`` Traversable (package data)."""

    def read_bytes(self) -> bytes: ...

    def open(self, mode: str = "r") -> Any: ...


def loads(raw: bytes | str, *, exact_integers: bool = True) -> Any:
    """``raw`` parsed: orjson when it reads it exactly as ``json`` would, else ``json``.

    ``exact_integers=False`` skips the scan for integers past 64 bits (orjson turns them into
    floats): the MAADBench hot path, whose numbers are token counts and times, where such a
    value is refused either way.
    """
    if exact_integers:
        long_digits = _LONG_DIGITS_BYTES if isinstance(raw, bytes) else _LONG_DIGITS
        if long_digits.search(raw):
            return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False)


def finite(value: Any) -> Any:
    """``value`` with every non-finite float written as protobuf's JSON mapping writes it (the
    strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``): a bare NaN is not JSON, and strict
    readers (DuckDB's among them) refuse a column holding one."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` that is always valid JSON: non-finite numbers as
    :func:`finite` writes them. What every stored JSON column is written with."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **options)


def compact(value: Any) -> str:
    """An ``extra`` column's JSON (read by queries, compact): orjson, ``json`` for what it refuses.
    orjson would write a non-finite number as null: it goes to ``json``, which keeps it as text."""
    try:
        if not _has_non_finite(value):
            return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):
        pass
    return readable(value)


def readable(value: Any) -> str:
    """Structured output as a reader sees it in the trace view: json's spacing, not compact."""
    try:
        return _ENCODER.encode(value)
    except ValueError:
        return _ENCODER.encode(finite(value))


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


def text_or_none(value: Any) -> str | None:
    """A text column from an id-like value: None for null or "", else ``str(value)``."""
    return None if value is None or value == "" else str(value)


def as_text(value: Any) -> str | None:
    """A text column from a message: a string as it is, a structure as :func:`readable` JSON."""
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else readable(value)


# --------------------------------------------------------------------------- finding files

def json_files(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.json`` below it (hidden folders skipped), sorted."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found = (p for p in path.rglob("*.json") if p.is_file())
    return sorted(p for p in found if not any(part.startswith(".") for part in p.relative_to(path).parts))


def walk_json_files(root: Path) -> Iterator[tuple[str, str]]:
    """``(file, path relative to root)`` for every *.json below root, in a stable order.

    Plain strings: building a ``Path`` per file was most of the listing's time at 10^5 files.
    """
    for dirpath, dirnames, filenames in os.walk(root):
        # Sorted so run order, and so every re-ingest, is identical; hidden folders are tool litter.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        # The relative folder once per folder, not per file (a release has 10^5 files or more).
        folder = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if folder == "." else folder + "/"
        for name in sorted(filenames):
            if name.endswith(".json") and not name.startswith("."):
                yield os.path.join(dirpath, name), prefix + name


def first_json(path: Path) -> Any | None:
    """The first JSON file under ``path``, parsed, for a cheap ``can_read``; None if none reads."""
    try:
        files = json_files(Path(path))
        return loads(read_maybe_gzip(files[0]).decode("utf-8-sig")) if files else None
    except (OSError, EOFError, ValueError, RecursionError, zlib.error):
        return None


# --------------------------------------------------------------------------- any JSON / JSONL / gzip file

def read_raw(file: Readable | str | Path, rel: str | Path, problems: list[InputError]) -> bytes | None:
    """The file's bytes, inflated in a stream when it is gzip (by its magic bytes) and refused
    past the inflated size limit; None with one sentence naming ``rel`` when it cannot be read."""
    try:
        return read_maybe_gzip(file)
    except TooLarge as exc:
        problems.append(InputError(rel, None, f"{exc}."))
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # BadGzipFile is an OSError: first
        problems.append(InputError(rel, None, f"is not a complete gzip file ({first_line(exc)})."))
    except OSError as exc:
        problems.append(InputError(rel, None, f"cannot be read ({exc.strerror or first_line(exc)})."))
    return None


def decode_text(raw: bytes, rel: str | Path, problems: list[InputError], why: str = "") -> str | None:
    """``raw`` as UTF-8 text (a byte-order mark dropped), or None with the byte and line that do
    not decode; ``why`` ends the sentence (e.g. "; OTLP/JSON is UTF-8")."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        problems.append(InputError(rel, None, f"is not UTF-8 text (byte {exc.start}, line {line}, cannot be "
                                              f"decoded){why}."))
        return None


def parse_documents(text: str, rel: str | Path, problems: list[InputError], *, lines: bool,
                    lead: str = "") -> list[tuple[Any, int | None]] | None:
    """The JSON documents of ``text``: the whole text (``lines`` False) or each non-empty line,
    with the line each starts on (None for a whole text), every value checked for depth and lone
    surrogates. None after the first problem; ``lead`` starts its sentence (e.g. "is not OTLP/JSON: ")."""
    chunks = ([(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()] if lines
              else [(None, text)])
    out: list[tuple[Any, int | None]] = []
    for n, chunk in chunks:
        where = f"line {n} " if n is not None else ""
        try:
            value = loads(chunk)
        except RecursionError:
            problems.append(InputError(rel, None, f"{lead}{where}nests arrays or objects more than {MAX_DEPTH} "
                                                  "levels deep; no release is shaped like that."))
            return None
        except ValueError as exc:
            problems.append(InputError(rel, None, f"{lead}{where}is not valid JSON ({first_line(exc)})."))
            return None
        named = f"{rel}: line {n}" if n is not None else rel
        if (problem := check_value(value, named, surrogates=bool(_SURROGATE_ESCAPE.search(chunk)))) is not None:
            problems.append(problem)
            return None
        out.append((value, n))
    return out


# --------------------------------------------------------------------------- a release file

def load_json(file: Readable, problems: list[InputError], expected: str = "a JSON object or list") -> Any | None:
    """The parsed file, or None with the reason appended to ``problems``.

    ``expected`` names what the format wants in the file, for the message about a bare ``null``.
    """
    raw = read_raw(file, str(file), problems)
    text = decode_text(raw, str(file), problems) if raw is not None else None
    return parse_json_text(text, str(file), problems, expected) if text is not None else None


def parse_json_text(text: str, file: str | Path, problems: list[InputError],
                    expected: str = "a JSON object or list") -> Any | None:
    """``text`` parsed and checked (depth, lone surrogates, bare null); None after a problem."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        problems.append(InputError(file, None, "is empty."))
        return None
    try:
        value = loads(text)
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


# --------------------------------------------------------------------------- one object per file

def load_object(file: str, rel: str, problems: list[InputError], *, what: str,
                required: tuple[str, ...]) -> dict | None:
    """One file holding one JSON object with the ``required`` keys, or None after a problem.

    ``rel`` names the file in problems; ``what`` names the document in the format's terms
    ("a MAADBench trace").
    """
    try:
        with open(file, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        problems.append(InputError(rel, None, f"cannot be read ({exc.strerror or exc})."))
        return None
    raw = raw.removeprefix(codecs.BOM_UTF8)  # accepted, as the CSV reader accepts it
    if not raw.strip():
        problems.append(InputError(rel, None, f"is empty; expected {what} (a JSON object)."))
        return None
    try:
        doc = loads(raw, exact_integers=False)
    except RecursionError:
        problems.append(InputError(rel, None, f"nests arrays or objects more than {MAX_DEPTH} levels deep; "
                                              f"{what} is never shaped like that."))
        return None
    except ValueError as exc:  # also a non-UTF-8 file or an integer past Python's digit limit
        problems.append(InputError(rel, None, f"is not valid JSON ({first_line(exc)})."))
        return None
    if not isinstance(doc, dict):
        problems.append(InputError(rel, None, f"top level is a JSON {json_type(doc)}; {what} is an object with {_listed(required)}."))
        return None
    # Lone surrogates can only come from an escape, so the full walk runs only when one is there.
    if has_surrogate_escape(raw) and (problem := check_value(doc, rel)) is not None:
        problems.append(problem)
        return None
    missing = [key for key in required if key not in doc]
    for key in missing:
        problems.append(InputError(rel, key, f"is missing; this is not {what} (needs {_listed(required)})."))
    return None if missing else doc


def has_keys(file: str | Path, required: tuple[str, ...]) -> bool:
    """Whether ``file`` holds a JSON object with the ``required`` keys (a cheap ``can_read``)."""
    try:
        with open(file, "rb") as handle:
            doc = loads(handle.read().removeprefix(codecs.BOM_UTF8), exact_integers=False)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and all(key in doc for key in required)


def _listed(keys: tuple[str, ...]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]


# --------------------------------------------------------------------------- checks on the value

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
