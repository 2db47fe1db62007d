"""The CatchBench golden board (``golden/board.txt``): its text tables read into published rows
(board, corpus, entrant, metric, value), which the boards show beside the numbers they
recompute. Apart from the adapter: the layout of a printed board is a parser of its own, with
its own traps (tables printed without a name are placed by their values, not their order).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

PRE_CORPUS = "catchbench-pre"
WHOWHEN_CORPUS = "whowhen"

_BLOCK = re.compile(r"^\[(?P<pillar>PRE|POST|LIVE)\]\s+(?P<task>\S+)\s+::\s+(?P<label>.+?)\s*$")
_EARLY_WARNING = re.compile(r"^LIVE streaming early-warning\b")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_PERCENT = re.compile(r"^(?P<n>\d+(?:\.\d+)?)%$")
_BEYOND = re.compile(r"^>\d+(?:\.\d+)?%$")
# Boards the analysis layer asks for by these names; other tasks keep their own name, kebab-cased.
_BOARD_NAMES = {"pre_over_privilege": "pre", "post_localization": "post-localization",
                "post_detection": "post-detection", "live_streaming": "live"}
_CORPUS_NAMES = {"multi": PRE_CORPUS, "overall": PRE_CORPUS, "whoandwhen": WHOWHEN_CORPUS}
_BY_SOURCE = "F1 by source"


@dataclass
class BoardTable:
    """One "method  col col ..." table of the board text, under the title line above it."""

    title: str
    columns: list[str]
    rows: list[tuple[str, list[float | None]]] = field(default_factory=list)


def parse_board(text: str) -> tuple[list[dict], list[str]]:
    """published_values rows from the golden board text, and notes on what could not be placed."""
    tables = board_tables(text)
    rows: list[dict] = []
    for table in tables:
        match = _BLOCK.match(table.title)
        if match:
            rows.extend(_block_rows(match, table))
    notes: list[str] = []
    rows.extend(_early_warning_rows(tables, rows, notes))
    return _dedupe(rows, notes), notes


def board_tables(text: str) -> list[BoardTable]:
    """Every table: an unindented title, then an indented "method ..." header, then rows.

    A row is kept when its last len(columns) tokens are all values, so prose lines inside a
    block (label sources, abstention counts) fall out without naming them.
    """
    tables: list[BoardTable] = []
    title: str | None = None
    table: BoardTable | None = None
    for line in text.splitlines():
        if not line.strip():
            table = None
            continue
        if not line[0].isspace():
            title, table = line.strip(), None
            continue
        tokens = line.split()
        if table is None and title is not None and tokens[0] == "method" and len(tokens) > 1:
            table = BoardTable(title, tokens[1:])
            tables.append(table)
        elif table is not None:
            row = _table_row(line, len(table.columns))
            if row is not None:
                table.rows.append(row)
    return tables


def _table_row(line: str, n_columns: int) -> tuple[str, list[float | None]] | None:
    tokens = line.split()
    if len(tokens) <= n_columns:
        return None
    cells = tokens[-n_columns:]
    if not all(_is_value(c) for c in cells):
        return None
    # The entrant is the text before the value cells, with its inner spacing as printed.
    entrant = re.match(r"^\s*(.*?)" + r"\s+\S+" * n_columns + r"\s*$", line)[1]
    return entrant, [_value(c) for c in cells]


def _is_value(cell: str) -> bool:
    return bool(_NUMBER.match(cell) or _PERCENT.match(cell) or _BEYOND.match(cell))


def _value(cell: str) -> float | None:
    """0.452 -> 0.452; "25%" (a prefix) -> 25.0; ">100%" (never reached) -> None."""
    if _NUMBER.match(cell):
        return float(cell)
    percent = _PERCENT.match(cell)
    return float(percent["n"]) if percent else None


def _block_rows(match: re.Match, table: BoardTable) -> list[dict]:
    task, label = match["task"], match["label"]
    board = _BOARD_NAMES.get(task, task.replace("_", "-"))
    rows = []
    for entrant, values in table.rows:
        for column, value in zip(table.columns, values):
            if label == _BY_SOURCE:  # columns are corpora and every cell is an F1
                corpus, metric = _CORPUS_NAMES.get(column, column), "f1"
            else:
                corpus, metric = _CORPUS_NAMES.get(label, label), column.lower()
            rows.append({"board": board, "corpus": corpus, "entrant": entrant, "metric": metric, "value": value})
    return rows


def _early_warning_rows(tables: list[BoardTable], block_rows: list[dict], notes: list[str]) -> list[dict]:
    """The two unnamed "LIVE streaming early-warning" tables, each placed on its corpus.

    The tables do not say which corpus they belong to. Each entrant's prefix_auc in the
    ``[LIVE] live_streaming :: X`` blocks is the mean of its per-prefix AUCs, so the table whose
    prefix means sit closest to corpus X's prefix_auc is X's. Board order is the fallback.
    """
    early = [t for t in tables if _EARLY_WARNING.match(t.title)]
    if not early:
        return []
    live: dict[str, dict[str, float]] = {}
    for row in block_rows:
        if row["board"] == "live" and row["metric"] == "prefix_auc" and row["value"] is not None:
            live.setdefault(row["corpus"], {})[row["entrant"]] = row["value"]
    corpora = _assign_corpora(early, live)
    if len(corpora) < len(early):
        notes.append(f"{len(early) - len(corpora)} LIVE early-warning table(s) of the golden board match no "
                     "live_streaming block and were not stored.")
    rows = []
    for table, corpus in zip(early, corpora):
        for entrant, values in table.rows:
            for column, value in zip(table.columns, values):
                rows.append({"board": "live", "corpus": corpus, "entrant": entrant,
                             "metric": _early_warning_metric(column), "value": value})
    return rows


def _early_warning_metric(column: str) -> str:
    percent = _PERCENT.match(column)
    return f"auc@{percent['n']}" if percent else column.lower()


def _assign_corpora(early: list[BoardTable], live: dict[str, dict[str, float]]) -> list[str]:
    candidates = list(live)
    if len(candidates) < len(early):
        return candidates
    best, best_cost = candidates[: len(early)], float("inf")
    for order in itertools.permutations(candidates, len(early)):
        cost = sum(_prefix_distance(t, live[c]) for t, c in zip(early, order))
        if cost < best_cost - 1e-12:  # strict: ties keep the earlier (board) order
            best, best_cost = list(order), cost
    return best


def _prefix_distance(table: BoardTable, prefix_auc: dict[str, float]) -> float:
    auc_columns = [i for i, c in enumerate(table.columns) if _PERCENT.match(c)]
    gaps = []
    for entrant, values in table.rows:
        aucs = [values[i] for i in auc_columns if values[i] is not None]
        if entrant in prefix_auc and aucs:
            gaps.append(abs(sum(aucs) / len(aucs) - prefix_auc[entrant]))
    return sum(gaps) / len(gaps) if gaps else float("inf")


def _dedupe(rows: list[dict], notes: list[str]) -> list[dict]:
    """The by-source "overall" column repeats the pooled F1; keep one row per key."""
    kept: dict[tuple, dict] = {}
    for row in rows:
        key = (row["board"], row["corpus"], row["entrant"], row["metric"])
        if key not in kept:
            kept[key] = row
        elif kept[key]["value"] != row["value"]:
            notes.append(f"golden board prints two values for {key}: {kept[key]['value']} and {row['value']}; "
                         "kept the first.")
    return list(kept.values())
