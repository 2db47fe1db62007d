"""Released step-level detector predictions (MAADBench ``benchmark_AD`` CSVs), joined to steps.

Two CSV forms carry the same keys (``source_file, action_id, step_num``):

- long: ``predictions.csv`` as ``benchmark_AD`` writes it per method and seed (``test_id,
  gt_label, pred_label, pred_score`` plus manifest columns): one prediction set per file;
- wide: the figure CSVs with ``pred_score_<method>`` (and optional ``pred_label_<method>``)
  columns: one prediction set per method.

A row is joined to the step whose run's ``source_file`` matches by path suffix at a path
boundary (the CSV may hold an absolute path or just the file name), whose ``step_id`` is the
``action_id`` and whose ``step_idx`` is ``step_num`` (the 0-based position in the trace). The
traces must therefore be in the store first. Rows that join nothing are counted in the notes,
never dropped silently; a file none of whose rows join fails the ingest.

The CSVs are read and checked in a private DuckDB; only the distinct join keys go to the store
(one parameter-bound query through ``Context.lookup``), so the store is never loaded whole.
"""
from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..duck import connect as duck_connect
from ..errors import IngestFailed, InputError
from . import Batch, Context
from .kit import MAX_INT64, show
from .kit.csvfiles import read_csv

FORMAT = "predictions"
KEY_COLUMNS = ("source_file", "action_id", "step_num")
SCORE = "pred_score"
LABEL = "pred_label"
GT_LABEL = "gt_label"
WIDE_SCORE = "pred_score_"
WIDE_LABEL = "pred_label_"
# benchmark_AD writes one predictions.csv per method and seed; that stem names nothing.
GENERIC_STEMS = {"predictions", "prediction", "preds", "pred"}
MAX_SEED = MAX_INT64  # prediction_sets.seed is an int64 column
# A prediction CSV holds paths, ids and numbers: a longer field is a quote left open.
MAX_FIELD = 128 * 1024

_SEED = re.compile(r"(?:^|[_-])seed[_-]?(\d+)$", re.IGNORECASE)
_SOURCE_BAD_CHARS = re.compile(r"[^a-z0-9_.-]+")
# Detector families of the MAADBench paper's baselines (name -> family, supervision).
_KNOWN_METHODS = {
    "xgboost": ("tree", "supervised"),
    "random_forest": ("tree", "supervised"),
    "rf": ("tree", "supervised"),
    "g-safeguard": ("graph", "supervised"),
    "gsafeguard": ("graph", "supervised"),
    "deepsad": ("deep", "semi-supervised"),
    "dominant": ("graph", "unsupervised"),
    "isolation_forest": ("pyod", "unsupervised"),
    "iforest": ("pyod", "unsupervised"),
    "knn": ("pyod", "unsupervised"),
    "lof": ("pyod", "unsupervised"),
    "random": ("baseline", "none"),
}


@dataclass
class ScoreSpec:
    """One prediction set inside a CSV: its method and the columns holding score and label."""

    method: str
    score_column: str
    label_column: str | None
    form: str  # long | wide


@dataclass
class CsvFile:
    path: Path
    table: str  # name of the loaded table in the private DuckDB
    n_rows: int
    specs: list[ScoreSpec]
    has_gt: bool
    seed: int | None
    matches: pa.Table | None = None
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- entry points

def can_read(path: Path) -> bool:
    """A prediction CSV, or a folder holding at least one."""
    path = Path(path)
    if path.is_file():
        return _is_prediction_csv(path)
    if path.is_dir():
        return any(_is_prediction_csv(f) for f in itertools.islice(_csv_files(path), 500))
    return False


def read(path: Path | None, context: Context, *, method: str | None = None, seed: int | None = None,
         split: str = "test") -> Batch:
    """Join every prediction CSV under ``path`` to the store's steps.

    ``method`` and ``seed`` override what the file's location says (long form only); the
    released CSVs score the held-out test split of a room-disjoint split, hence ``split``.
    """
    if path is None:
        raise IngestFailed([InputError("(none)", None,
                                       "the predictions importer needs a CSV file or a folder of CSVs.")])
    path = Path(path)
    if seed is not None and not 0 <= seed < MAX_SEED:
        raise IngestFailed([InputError(path, "seed", f"must be a whole number from 0 to 2**63 - 1, not {seed}.")])
    files, skipped = _input_files(path)
    if not files:
        raise IngestFailed([InputError(path, None, "holds no prediction CSV (columns source_file, action_id, "
                                                  "step_num and pred_score or pred_score_<method>).")])
    source = source_name(path, method, seed)
    con = duck_connect()
    try:
        problems: list[InputError] = []
        loaded = [f for i, file in enumerate(files)
                  if (f := _load_csv(con, file, f"csv_{i}", method, seed, problems)) is not None]
        # Join even when some file is broken, so one failed ingest lists every bad file.
        query = _store_query(context)
        for csv_file in loaded:
            _join(con, csv_file, query, problems)
        if problems:
            raise IngestFailed(problems)
        sets, predictions = _prediction_tables(con, loaded, source, split, path)
    finally:
        con.close()
    notes = [n for f in loaded for n in f.notes]
    if skipped:
        notes.append(f"{skipped} CSV file(s) under {path} are not prediction files and were skipped.")
    return Batch(source=source, tables={"prediction_sets": sets, "predictions": predictions}, notes=notes,
                 meta={"files": [str(f.path) for f in loaded]})


def source_name(path: Path, method: str | None = None, seed: int | None = None) -> str:
    """``predictions-<file stem>`` (or folder name); a generic ``predictions.csv`` is named by its
    method and seed, because benchmark_AD writes one per method and seed and a shared name would
    make each ingest replace the previous one."""
    path = Path(path)
    is_file = not path.is_dir()
    stem = path.stem if is_file else path.name
    if is_file and stem.lower() in GENERIC_STEMS:
        method = method or infer_method(path)
        seed = seed if seed is not None else infer_seed(path)
        stem = method + (f"-seed{seed}" if seed is not None else "")
    clean = _SOURCE_BAD_CHARS.sub("-", stem.lower()).strip("-_.") or "csv"
    return f"predictions-{clean}"[:81]


def infer_method(file: Path) -> str:
    """The file stem, or for a generic ``predictions.csv`` the nearest folder not named seed_<n>."""
    if file.stem.lower() not in GENERIC_STEMS:
        return file.stem
    for folder in file.parent.parts[::-1]:
        if not _SEED.search(folder) and folder not in ("", "/"):
            return folder
    return file.stem


def infer_seed(file: Path) -> int | None:
    """A ``seed_<n>`` (or ``..._seed<n>``) in the file stem or one of its three nearest folders."""
    for part in [file.stem, *file.parent.parts[::-1][:3]]:
        match = _SEED.search(part)
        if match:
            return int(match[1])
    return None


# --------------------------------------------------------------------------- finding files

def _csv_files(folder: Path) -> Iterator[Path]:
    return (f for f in sorted(folder.rglob("*")) if f.is_file() and f.suffix.lower() == ".csv")


def _header(file: Path) -> list[str] | None:
    """The first line's column names (cheap: the first line only), or None when it does not read."""
    try:
        with file.open(newline="", encoding="utf-8-sig") as fh:
            first = fh.readline(MAX_FIELD)
    except (OSError, UnicodeDecodeError):
        return None
    try:
        cells = [c.strip() for c in next(csv.reader([first.rstrip("\r\n")]), [])]
    except csv.Error:
        return None
    return cells if any(cells) else None


def _is_prediction_csv(file: Path) -> bool:
    header = _header(file) if file.suffix.lower() == ".csv" else None
    return bool(header) and set(KEY_COLUMNS) <= set(header) and bool(_score_columns(header))


def _input_files(path: Path) -> tuple[list[Path], int]:
    """The CSVs to read, and how many CSVs of a folder were not prediction files.

    In a folder a CSV counts as a prediction file when it has a score column, so one missing a
    key column is reported as broken rather than skipped, while MAADBench's per-run
    summary.csv files (keys, no scores) are left alone. An empty or unreadable CSV is reported.
    """
    if path.is_file():
        return [path], 0
    files, skipped = [], 0
    for file in _csv_files(path):
        header = _header(file)
        if header is None or _score_columns(header):
            files.append(file)
        else:
            skipped += 1
    return files, skipped


def _score_columns(header: list[str]) -> list[str]:
    return [c for c in header if c == SCORE or (c.startswith(WIDE_SCORE) and len(c) > len(WIDE_SCORE))]


# --------------------------------------------------------------------------- reading and checking

def _quote(column: str) -> str:
    """An identifier from a user's CSV header, quoted so it can only ever name a column."""
    return '"' + column.replace('"', '""') + '"'


def _load_csv(con: duckdb.DuckDBPyConnection, file: Path, table: str, method: str | None, seed: int | None,
              problems: list[InputError]) -> CsvFile | None:
    if not file.is_file() or file.stat().st_size == 0:
        problems.append(InputError(file, None, "is empty; a prediction CSV needs a header and at least one row."))
        return None
    shape = _shape_problem(file)
    if shape is not None:
        problems.append(shape)
        return None
    read = read_csv(file, problems, what="a prediction CSV", max_field=MAX_FIELD,
                    too_long="; a prediction CSV holds paths, ids and numbers (is a quote left open?)")
    if read is None:
        return None
    if len(read.header) == 1 and (sep := next((c for c in "\t;|" if c in read.header[0]), None)):
        problems.append(InputError(file, None, f"is not comma-separated (its header is split by {sep!r}); "
                                               "prediction CSVs use commas."))
        return None
    con.register(f"{table}_text", read.arrow(row_column="_row"))
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM {table}_text")
    con.unregister(f"{table}_text")
    columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
    n_rows = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    before = len(problems)
    specs = _specs(file, columns, method)
    for column in KEY_COLUMNS:
        if column not in columns:
            problems.append(InputError(file, column, "is a required column and is missing."))
    if not specs:
        problems.append(InputError(file, SCORE, "no score column: expected pred_score or pred_score_<method>."))
    if n_rows == 0:
        problems.append(InputError(file, None, "has a header but no rows."))
    if len(problems) > before:
        return None
    _check_values(con, file, table, specs, columns, problems)
    if seed is None:
        seed = infer_seed(file)
        if seed is not None and seed >= MAX_SEED:
            problems.append(InputError(file, "seed", f"the seed_<n> in its path gives {seed}, beyond 2**63 - 1; "
                                                     "pass --seed."))
    if len(problems) > before:
        return None
    return CsvFile(path=file, table=table, n_rows=n_rows, specs=specs, has_gt=GT_LABEL in columns, seed=seed)


def _shape_problem(file: Path) -> InputError | None:
    """A file that holds JSON, not CSV (the CSV reader would call it one ragged column)."""
    try:
        with file.open("rb") as fh:
            head = fh.read(8).removeprefix(b"\xef\xbb\xbf").lstrip()[:1]
    except OSError as exc:
        return InputError(file, None, f"cannot be read ({exc.strerror or exc}).")
    if head in (b"{", b"["):
        return InputError(file, None, "holds JSON; the predictions format reads CSV (a header with "
                                      "source_file, action_id, step_num and pred_score or pred_score_<method>).")
    return None


def _specs(file: Path, columns: list[str], method: str | None) -> list[ScoreSpec]:
    specs = []
    if SCORE in columns:
        specs.append(ScoreSpec(method or infer_method(file), SCORE, LABEL if LABEL in columns else None, "long"))
    for column in columns:
        if column.startswith(WIDE_SCORE) and len(column) > len(WIDE_SCORE):
            name = column[len(WIDE_SCORE):]
            label = WIDE_LABEL + name
            specs.append(ScoreSpec(name, column, label if label in columns else None, "wide"))
    return specs


def _check_values(con: duckdb.DuckDBPyConnection, file: Path, table: str, specs: list[ScoreSpec],
                  columns: list[str], problems: list[InputError]) -> None:
    """One problem per column whose values cannot be what the column says, with an example."""
    checks: list[tuple[str, str, str]] = [
        ("source_file", "coalesce(trim({c}), '') = ''", "is empty"),
        ("action_id", "coalesce(trim({c}), '') = ''", "is empty"),
        # NaN passes ">= 0" and "= floor()" in DuckDB, and 1e20 overflows BIGINT: both are refused here.
        ("step_num", "NOT coalesce(isfinite(try_cast({c} AS DOUBLE)) AND try_cast({c} AS DOUBLE) >= 0 AND "
                     "try_cast({c} AS DOUBLE) = floor(try_cast({c} AS DOUBLE)) AND "
                     "try_cast({c} AS DOUBLE) < 9.2e18, false)", "is not a step position (a whole number >= 0)"),
    ]
    not_binary = "trim({c}) <> '' AND coalesce(try_cast({c} AS DOUBLE) NOT IN (0, 1), true)"
    for spec in specs:
        checks.append((spec.score_column, "NOT coalesce(isfinite(try_cast({c} AS DOUBLE)), false)",
                       "is not a number"))
        if spec.label_column:
            checks.append((spec.label_column, not_binary, "is not 0 or 1"))
    if GT_LABEL in columns:
        checks.append((GT_LABEL, not_binary, "is not 0 or 1"))
    for column, condition, what in checks:
        where = condition.format(c=_quote(column))
        bad, first_row, value = con.execute(
            f"SELECT count(*), min(_row), arg_min({_quote(column)}, _row) FROM {table} WHERE {where}").fetchall()[0]
        if bad:
            problems.append(InputError(file, column, f"{bad} row(s) where the value {what} "
                                                     f"(first: data row {first_row}, value {show(value)})."))


# --------------------------------------------------------------------------- joining to the store

STORE_MATCH_SQL = """
WITH keys AS (
    SELECT unnest(?::VARCHAR[]) AS path, unnest(?::VARCHAR[]) AS action_id, unnest(?::BIGINT[]) AS step_num
),
stored AS (
    SELECT r.run_id, r.corpus,
           regexp_replace(regexp_replace(replace(r.source_file, '\\', '/'), '^(\\./)+', ''), '\\.json$', '') AS path
    FROM runs r
)
SELECT k.path, k.action_id, k.step_num, s.run_id, r.corpus, s.step_idx, s.label
FROM keys k
JOIN steps s ON s.step_id = k.action_id AND s.step_idx = k.step_num
JOIN stored r ON r.run_id = s.run_id
WHERE k.path = r.path OR ends_with(k.path, '/' || r.path) OR ends_with(r.path, '/' || k.path)
"""

# The CSV side gets the same path normal form as the store side above.
_CSV_PATH = ("regexp_replace(regexp_replace(replace(trim(source_file), '\\', '/'), '^(\\./)+', ''), "
             "'\\.json$', '')")


def _store_query(context: Context) -> Callable[[str, list], pa.Table]:
    """Run a bound query on the store (through the context's lookup), returning Arrow."""
    lookup = context.lookup

    def run(sql: str, params: list) -> pa.Table:
        return _as_arrow(lookup(sql, params))

    return run


def _as_arrow(result: Any) -> pa.Table:
    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatchReader):
        return result.read_all()
    return pa.Table.from_pandas(result, preserve_index=False)


def _join(con: duckdb.DuckDBPyConnection, f: CsvFile, query: Callable[[str, list], pa.Table],
          problems: list[InputError]) -> None:
    keys = con.execute(f"""SELECT DISTINCT {_CSV_PATH} AS path, trim(action_id) AS action_id,
                                  CAST(CAST(step_num AS DOUBLE) AS BIGINT) AS step_num FROM {f.table}""").fetchall()
    paths, actions, steps = (list(col) for col in zip(*keys))
    matches = query(STORE_MATCH_SQL, [paths, actions, steps])
    con.register(f"{f.table}_matches", matches)
    con.execute(f"""
        CREATE TABLE {f.table}_joined AS
        WITH rows AS (
            SELECT _row, {_CSV_PATH} AS path, trim(action_id) AS action_id,
                   CAST(CAST(step_num AS DOUBLE) AS BIGINT) AS step_num, trim(source_file) AS raw_path
            FROM {f.table}
        )
        SELECT r._row, r.raw_path, r.action_id, r.step_num,
               count(m.run_id) AS n_match, any_value(m.run_id) AS run_id, any_value(m.corpus) AS corpus,
               any_value(m.step_idx) AS step_idx, any_value(m.label) AS step_label
        FROM rows r LEFT JOIN {f.table}_matches m
          ON m.path = r.path AND m.action_id = r.action_id AND m.step_num = r.step_num
        GROUP BY ALL
    """)
    n_joined = con.execute(f"SELECT count(*) FROM {f.table}_joined WHERE n_match = 1").fetchall()[0][0]
    unmatched = _example(con, f, "n_match = 0")
    if n_joined == 0:
        problems.append(InputError(f.path, "source_file",
                                   f"none of its {f.n_rows} rows match a step in the store on (source_file, "
                                   f"action_id, step_num); ingest the traces first (e.g. {unmatched[1]})."))
        return
    if unmatched[0]:
        f.notes.append(f"{unmatched[0]} of {f.n_rows} rows of {f.path} match no step in the store "
                       f"(e.g. {unmatched[1]}).")
    ambiguous = _example(con, f, "n_match > 1")
    if ambiguous[0]:
        f.notes.append(f"{ambiguous[0]} of {f.n_rows} rows of {f.path} match steps of more than one run and were "
                       f"left out (e.g. {ambiguous[1]}); a longer source_file path would tell them apart.")


def _example(con: duckdb.DuckDBPyConnection, f: CsvFile, where: str) -> tuple[int, str]:
    n, row = con.execute(f"""SELECT count(*), arg_min(struct_pack(raw_path, action_id, step_num), _row)
                             FROM {f.table}_joined WHERE {where}""").fetchall()[0]
    example = f"{row['raw_path']} {row['action_id']} {row['step_num']}" if row else ""
    return n, example


# --------------------------------------------------------------------------- building the tables

def _prediction_tables(con: duckdb.DuckDBPyConnection, files: list[CsvFile], source: str, split: str,
                       root: Path) -> tuple[list[dict], pa.Table | None]:
    sets: list[dict] = []
    parts: list[pa.Table] = []
    seen: set[str] = set()
    for f in files:
        corpora = [r[0] for r in con.execute(
            f"SELECT DISTINCT corpus FROM {f.table}_joined WHERE n_match = 1 ORDER BY corpus").fetchall()]
        _gt_note(con, f)
        for spec, corpus in itertools.product(f.specs, corpora):
            set_id = _set_id(corpus, source, spec.method, f, root, seen)
            table, n_duplicates = _set_rows(con, f, spec, corpus, set_id, split)
            if n_duplicates:
                f.notes.append(f"{n_duplicates} rows of {f.path} ({spec.score_column}) repeat a step already "
                               "predicted; kept the first.")
            parts.append(table)
            sets.append(_set_row(f, spec, corpus, set_id, table.num_rows))
    return sets, pa.concat_tables(parts) if parts else None


def _set_id(corpus: str, source: str, method: str, f: CsvFile, root: Path, seen: set[str]) -> str:
    set_id = f"{corpus}:{source}:{method}" + (f":seed{f.seed}" if f.seed is not None else "")
    if set_id in seen:  # two files of one folder with the same method and seed
        rel = f.path.relative_to(root) if root.is_dir() else Path(f.path.name)
        set_id += ":" + rel.with_suffix("").as_posix()
    seen.add(set_id)
    return set_id


def _set_rows(con: duckdb.DuckDBPyConnection, f: CsvFile, spec: ScoreSpec, corpus: str, set_id: str,
              split: str) -> tuple[pa.Table, int]:
    label = (f"CAST(CAST(nullif(trim(c.{_quote(spec.label_column)}), '') AS DOUBLE) AS TINYINT)"
             if spec.label_column else "CAST(NULL AS TINYINT)")
    sql = f"""
        WITH scored AS (
            SELECT j._row, j.run_id, j.step_idx, CAST(c.{_quote(spec.score_column)} AS DOUBLE) AS score,
                   {label} AS pred_label,
                   row_number() OVER (PARTITION BY j.run_id, j.step_idx ORDER BY j._row) AS nth
            FROM {f.table}_joined j JOIN {f.table} c USING (_row)
            WHERE j.n_match = 1 AND j.corpus = ?
        )
        SELECT ? AS set_id, ? AS corpus, run_id, step_idx, score, pred_label, ? AS split
        FROM scored WHERE nth = 1 ORDER BY _row
    """
    table = con.sql(sql, params=[corpus, set_id, corpus, split]).to_arrow_table()
    n_duplicates = con.execute(f"""SELECT count(*) - count(DISTINCT (run_id, step_idx)) FROM {f.table}_joined
                                   WHERE n_match = 1 AND corpus = ?""", [corpus]).fetchall()[0][0]
    return table, n_duplicates


def _set_row(f: CsvFile, spec: ScoreSpec, corpus: str, set_id: str, n_rows: int) -> dict:
    family, supervision = _KNOWN_METHODS.get(spec.method.lower().replace(" ", "_"), (None, None))
    params = {"file": str(f.path), "form": spec.form, "score_column": spec.score_column,
              "label_column": spec.label_column, "n_rows": f.n_rows, "n_predictions": n_rows}
    return {"set_id": set_id, "corpus": corpus, "method": spec.method, "family": family,
            "supervision": supervision, "granularity": "step", "seed": f.seed,
            "params": json.dumps(params, sort_keys=True), "origin": "release", "source_file": str(f.path)}


def _gt_note(con: duckdb.DuckDBPyConnection, f: CsvFile) -> None:
    """A gt_label that disagrees with the stored step label hints at a join to the wrong step."""
    if not f.has_gt:
        return
    n, joined, row = con.execute(f"""
        SELECT count(*) FILTER (WHERE try_cast(c.gt_label AS DOUBLE) <> j.step_label),
               count(*),
               arg_min(struct_pack(j.raw_path, j.action_id, j.step_num, c.gt_label, j.step_label), j._row)
                   FILTER (WHERE try_cast(c.gt_label AS DOUBLE) <> j.step_label)
        FROM {f.table}_joined j JOIN {f.table} c USING (_row) WHERE j.n_match = 1""").fetchall()[0]
    if n:
        f.notes.append(f"{n} of {joined} joined rows of {f.path} carry a gt_label that differs from the stored step "
                       f"label (e.g. {row['raw_path']} {row['action_id']} {row['step_num']}: gt_label "
                       f"{row['gt_label']}, step label {row['step_label']}).")
