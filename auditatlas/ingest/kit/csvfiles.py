"""The one CSV reader of every adapter (labels, reviews, predictions): Python's csv module.

Why this reader and not pyarrow's or DuckDB's, which the adapters used before: it is the only
one of the three that names the line of every problem. pyarrow reports a field longer than its
block as a row that "straddles two block boundaries"; DuckDB reports an over-long field as a
bare "CSV Error on Line: 1" and reads a ragged file as one column, so every key column looks
missing. Here the file is read a row at a time, every cell stays text (an adapter decides what
a column means: a note "1" stays a note), and each problem is one sentence naming the file,
the line and, where one cell is at fault, its column.

A field is checked against the adapter's own limit after it is read (the csv module's limit is
raised for that; its own error, ``_csv.Error: field larger than field limit``, names neither
line nor column), so a long note is accepted where a format takes one and refused with its
column named where a format holds ids and numbers. A file is read whole at most once: memory
is bounded by the file's size.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from .rows import no_cycle_collection

# A field longer than this is refused by every adapter: past any note or id a person writes.
MAX_FIELD = 16 * 1024 * 1024
# The csv module's own limit, raised to what a C long holds everywhere: the adapter's limit
# (checked per cell, with the column's name) is what refuses a field.
_CSV_MODULE_LIMIT = 2**31 - 1


@dataclass
class CsvTable:
    """A CSV file as text: its header (cells stripped) and its rows with the line each ends on.

    Every row has one cell per column (as read: an empty cell is ""); blank lines are left out.
    """

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def records(self) -> list[dict[str, str | None]]:
        """Each row as ``{column: cell}``, an empty cell None (columns without a name left out)."""
        return [{name: cell if cell != "" else None for name, cell in zip(self.header, row) if name}
                for row in self.rows]

    def arrow(self, row_column: str | None = None) -> pa.Table:
        """The rows as an Arrow table of text columns (a repeated name gets ``_1``, ``_2``, a
        blank one ``column<i>``); ``row_column`` adds the data row's number (1, 2, ...)."""
        names: list[str] = []
        for i, name in enumerate(self.header):
            base = name or f"column{i}"
            unique, n = base, 0
            while unique in names:
                n += 1
                unique = f"{base}_{n}"
            names.append(unique)
        columns = {}
        with no_cycle_collection():  # a column list per name: nothing cyclic to collect
            for i, name in enumerate(names):
                text = pa.array([row[i] for row in self.rows], type=pa.string())
                columns[name] = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)  # empty: null
        if row_column is not None:
            columns = {row_column: pa.array(range(1, len(self.rows) + 1), type=pa.int64()), **columns}
        return pa.table(columns)


def read_csv(path: str | Path, problems: list[InputError], *, what: str = "a CSV file",
             max_field: int = MAX_FIELD, too_long: str = "", ragged: bool = False) -> CsvTable | None:
    """The file's header and rows, or None after one sentence naming the file and line.

    ``what`` names the file in the format's terms ("a prediction CSV"); ``max_field`` is the
    longest cell the format takes (``too_long`` ends the sentence refusing a longer one).
    ``ragged``: a row with fewer cells than the header is padded with empty cells and extra
    cells are dropped (hand-written label files leave trailing optional columns out); else such
    a row is refused. An empty file is a table with no header and no rows (the format words it).
    """
    if csv.field_size_limit() < _CSV_MODULE_LIMIT:
        csv.field_size_limit(_CSV_MODULE_LIMIT)
    line = 0
    try:
        with no_cycle_collection(), open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, strict=True)
            header = next(reader, None)
            line = reader.line_num
            if header is None:
                return CsvTable([])
            if not any(cell.strip() for cell in header):
                problems.append(InputError(path, None, f"has no header line; {what} starts with its column names."))
                return None
            table = CsvTable([cell.strip() for cell in header])
            if (problem := _bad_cells(path, table.header, header, line, max_field, too_long)) is not None:
                problems.append(problem)
                return None
            width = len(header)
            nul = _holds_nul(path)  # one scan in C; then only such a file checks cells for NUL
            for row in reader:
                line = reader.line_num
                if not row:
                    continue
                if (max(map(len, row)) > max_field or nul) and \
                        (problem := _bad_cells(path, table.header, row, line, max_field, too_long)) is not None:
                    problems.append(problem)
                    return None
                if len(row) != width:
                    if not ragged:
                        problems.append(InputError(path, None, f"line {line} has {len(row)} fields but the header "
                                                               f"has {width}; every row needs one value per column."))
                        return None
                    row = (row + [""] * width)[:width]
                table.rows.append(row)
                table.lines.append(line)
            return table
    except UnicodeDecodeError:
        problems.append(InputError(path, None, f"is not UTF-8 text (line {line + 1} cannot be decoded); "
                                               f"{what} is UTF-8."))
    except csv.Error as exc:
        problems.append(InputError(path, None, _csv_error(exc, max(line, 1), what)))
    except OSError as exc:
        problems.append(InputError(path, None, f"cannot be read ({exc.strerror or exc})."))
    return None


def _holds_nul(path: str | Path) -> bool:
    with open(path, "rb") as raw:
        while chunk := raw.read(1 << 20):
            if b"\x00" in chunk:
                return True
    return False


def _bad_cells(path: str | Path, header: list[str], row: list[str], line: int, max_field: int,
               too_long: str) -> InputError | None:
    """The first cell of ``row`` that is too long or holds a NUL byte, as one sentence."""
    for i, cell in enumerate(row):
        column = header[i] if i < len(header) and header[i] else None
        if len(cell) > max_field:
            return InputError(path, column, f"line {line} has a field longer than {max_field:,} characters "
                                            f"({len(cell):,}){too_long}.")
        if "\x00" in cell:
            return InputError(path, column, f"line {line} holds a NUL byte; a CSV file is plain text.")
    return None


def _csv_error(exc: csv.Error, line: int, what: str) -> str:
    text = str(exc)
    if "unexpected end of data" in text:
        return f"ends inside a quoted field: a quote is never closed (read to line {line})."
    if "NUL" in text:
        return f"line {line} holds a NUL byte; a CSV file is plain text."
    return f"line {line} is not valid CSV ({text}); {what} is comma-separated with double quotes."
