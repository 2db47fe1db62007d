"""Your own step labels: a CSV or JSONL file joined to the steps of an OTLP corpus.

``auditatlas ingest labels FILE --corpus NAME``. Columns (CSV header or JSON keys):

- ``trace_id`` or ``run_id`` (the stored ``<corpus>:<id>`` or the id after the colon);
- ``span_id`` or ``step_idx`` (0-based, as the Explorer shows it);
- ``label``: 1 (anomaly) or 0 (normal); also ``true``/``false``;
- optional ``decisive`` (1/0), ``failure_mode``, ``note``.

The labels are a label process of their own: every step a row labels gets ``label_source``
``labels_file`` (a span annotation's label is ``span_annotation``, an unlabeled step
``unlabeled``), and its runs and the corpus name the file in ``label_process``. The source is
rewritten whole with the new labels (the store writer is atomic: a bad file changes nothing).
A second labels file replaces the first one's labels (steps it no longer labels go back to
their annotation label, or to unlabeled); re-ingesting the traces drops them (and says so).

A row that names no step of the corpus is not applied, and all such rows are named in one
note; a row that cannot be read (no label, a label that is not 1 or 0, no key columns) or two
rows that label one step differently refuse the file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AtlasError, IngestFailed, InputError
from ..schema import SORT_KEYS, sort_order_sql
from . import Batch, Context
from .kit import decode_text, json_text, parse_documents, read_raw
from .kit.compressed import read_maybe_gzip
from .kit.csvfiles import read_csv
from .kit.traces import LABEL_PROCESS_NONE, UNLABELED
from .otlp_mapping import ANNOTATION_SOURCE, LABEL_PROCESS_ANNOTATIONS, OWN_FORMATS

FORMAT = "labels"
LABEL_SOURCE = "labels_file"
RUN_KEYS = ("run_id", "trace_id")
STEP_KEYS = ("step_idx", "span_id")
_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no", ""}
_SHOWN = 10  # unmatched rows named in the note before "and N more"


@dataclass
class _Row:
    line: int
    run_id: str | None
    trace_id: str | None
    span_id: str | None
    step_idx: int | None
    label: int
    decisive: bool
    failure_mode: str | None
    note: str | None

    def named(self) -> str:
        run = f"run {self.run_id}" if self.run_id else f"trace {self.trace_id}"
        step = f"span {self.span_id}" if self.span_id else f"step {self.step_idx}"
        return f"line {self.line} ({run}, {step})"


def can_read(path: Path) -> bool:
    path = Path(path)
    if not path.is_file() or path.suffix.lower() not in (".csv", ".jsonl", ".ndjson", ".json"):
        return False
    try:
        head = read_maybe_gzip(path, head=4096).decode("utf-8", errors="ignore")
    except (OSError, EOFError, ValueError):
        return False
    return "label" in head and any(k in head for k in RUN_KEYS)


def read(path: Path | None, context: Context, corpus: str | None = None) -> Batch:
    """The source of OTLP corpus ``corpus`` again, with the file's labels on its steps."""
    if path is None or corpus is None:
        raise AtlasError("ingest labels needs a FILE and --corpus NAME.")
    path = Path(path)
    entry = _source_entry(context.store, corpus)
    problems: list[InputError] = []
    rows = _read_rows(path, problems)
    if not problems and not rows:
        problems.append(InputError(path, None, "holds no label rows; the loaded labels were kept."))
    if problems:
        raise IngestFailed(problems)
    tables = {name: context.lookup(f"SELECT * FROM {name} WHERE corpus = $1{_in_run_order(name)}",
                                   [corpus]).to_pylist()
              for name in ("corpora", "runs", "steps", "edges")}
    matched, unmatched = _join(rows, tables["steps"], corpus, path, problems)
    if problems:
        raise IngestFailed(problems)
    _apply(tables, matched, path.name)
    notes = [f"{len(matched)} step(s) of corpus '{corpus}' labeled from {path.name} "
             f"({sum(r.label for r in matched.values())} anomalous)."]
    if unmatched:
        shown = ", ".join(r.named() for r in unmatched[:_SHOWN])
        more = f" and {len(unmatched) - _SHOWN} more" if len(unmatched) > _SHOWN else ""
        notes.append(f"{len(unmatched)} row(s) of {path.name} match no step of corpus '{corpus}' and were not applied: "
                     f"{shown}{more}.")
    traces = entry.get("traces") if entry.get("format") == "labels" else {
        k: entry.get(k) for k in ("format", "origin", "group") if entry.get(k) is not None}
    return Batch(source=corpus, tables=tables, notes=notes, meta={"traces": traces, "labeled_steps": len(matched)})


def _in_run_order(table: str) -> str:
    """The ORDER BY that reads ``table`` in run order. A scan without one followed the parts, in
    run order when a source had one order across them; a received corpus keeps sorted segments
    (``auditatlas.store_segments``), and a span id repeated in two runs of a trace (``~2``) must
    still be labeled in the later run, as before."""
    keys = SORT_KEYS.get(table)
    return " ORDER BY " + sort_order_sql(keys) if keys else ""


def _source_entry(store: Path, corpus: str) -> dict:
    from ..store import read_manifest

    entry = read_manifest(store)["sources"].get(corpus)
    if entry is None:
        raise AtlasError(f"the store holds no corpus '{corpus}' from OTLP traces; ingest them first "
                         f"(`auditatlas ingest otlp PATH --corpus {corpus}`).")
    if entry.get("format") not in OWN_FORMATS:
        raise AtlasError(f"a labels file labels a corpus imported with `ingest otlp`; source '{corpus}' holds the "
                         f"{entry.get('format', 'unknown')} import, whose labels come with its release.")
    return entry


# --------------------------------------------------------------------------- reading the file


def _read_rows(path: Path, problems: list[InputError]) -> list[_Row]:
    if path.suffix.lower() == ".csv":
        records = _csv_records(path, problems)
    else:
        raw = read_raw(path, path, problems)
        text = decode_text(raw, path, problems) if raw is not None else None
        records = _json_records(text, path, problems) if text is not None else None
    if not records:  # None: a problem was appended; []: the caller says the file holds no rows
        return []
    keys = set().union(*(r.keys() for _, r in records))
    wanted = (("run_id or trace_id", RUN_KEYS), ("span_id or step_idx", STEP_KEYS), ("label", ("label",)))
    missing = [name for name, group in wanted if not keys & set(group)]
    if missing:
        problems.append(InputError(path, None, f"has no {', no '.join(missing)} column; a label row names a run "
                                               "(run_id or trace_id), a step (span_id or step_idx) and its label."))
        return []
    rows = [_row(n, record, path, problems) for n, record in records]
    return [r for r in rows if r is not None]


def _csv_records(path: Path, problems: list[InputError]) -> list[tuple[int, dict]] | None:
    """The rows of a labels CSV with their lines; a note may be long (up to the reader's limit),
    and a row may leave trailing optional columns out."""
    read = read_csv(path, problems, what="a labels CSV", ragged=True)
    if read is None:
        return None
    out = []
    for line, record in zip(read.lines, read.records()):
        clean = {k: v.strip() if v is not None else None for k, v in record.items()}
        if any(v not in (None, "") for v in clean.values()):
            out.append((line, clean))
    return out


def _json_records(text: str, path: Path, problems: list[InputError]) -> list[tuple[int, dict]] | None:
    if text.strip().startswith("["):
        docs = parse_documents(text, path, problems, lines=False)
        if docs is None:
            return None
        items = docs[0][0]
        pairs = list(enumerate(items if isinstance(items, list) else [], 1))
    else:
        docs = parse_documents(text, path, problems, lines=True)
        if docs is None:
            return None
        pairs = [(n, item) for item, n in docs]
    bad = [n for n, item in pairs if not isinstance(item, dict)]
    if bad:
        problems.append(InputError(path, None, f"line {bad[0]} is not a JSON object; each label row is one object."))
        return None
    return pairs


def _row(n: int, record: dict[str, Any], path: Path, problems: list[InputError]) -> _Row | None:
    def text(key: str) -> str | None:
        value = record.get(key)
        return None if value is None or str(value).strip() == "" else str(value).strip()

    label = _flag(record.get("label"))
    if label is None or text("label") is None:
        problems.append(InputError(path, "label", f"line {n}: must be 1 (anomaly) or 0 (normal), found "
                                                  f"{json.dumps(record.get('label'))}."))
        return None
    decisive = _flag(record.get("decisive"))
    if decisive is None:
        problems.append(InputError(path, "decisive", f"line {n}: must be 1 or 0 when given, found "
                                                     f"{json.dumps(record.get('decisive'))}."))
        return None
    step_text = text("step_idx")
    step_idx = None
    if step_text is not None:
        if not step_text.isdigit():
            problems.append(InputError(path, "step_idx", f"line {n}: must be a whole number >= 0, found {step_text!r}."))
            return None
        step_idx = int(step_text)
    run_id, trace_id, span_id = text("run_id"), text("trace_id"), text("span_id")
    if not (run_id or trace_id) or not (span_id or step_idx is not None):
        problems.append(InputError(path, None, f"line {n}: names no run (run_id or trace_id) or no step "
                                               "(span_id or step_idx)."))
        return None
    return _Row(n, run_id, trace_id.lower() if trace_id else None, span_id.lower() if span_id else None, step_idx,
                label, bool(decisive), text("failure_mode"), text("note"))


def _flag(value: Any) -> int | None:
    """1/0 from a cell: 1, 0, true, false (an empty cell is 0, for the optional columns)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    word = "" if value is None else str(value).strip().lower()
    return 1 if word in _TRUE else 0 if word in _FALSE else None


# --------------------------------------------------------------------------- joining


def _join(rows: list[_Row], steps: list[dict], corpus: str, path: Path,
          problems: list[InputError]) -> tuple[dict[tuple[str, int], _Row], list[_Row]]:
    """Each row's step ``(run_id, step_idx)``; the rows that name none."""
    by_span: dict[tuple[str, str], tuple[str, int]] = {}
    runs_of_trace: dict[str, set[str]] = {}
    run_steps: dict[str, int] = {}
    for step in steps:
        key = (step["run_id"], step["step_idx"])
        trace = (json.loads(step["extra"] or "{}")).get("trace_id")
        by_span[(step["run_id"], step["step_id"])] = key
        if trace:
            by_span[(trace, step["step_id"])] = key
            runs_of_trace.setdefault(trace, set()).add(step["run_id"])
        run_steps[step["run_id"]] = max(run_steps.get(step["run_id"], 0), step["step_idx"] + 1)
    matched: dict[tuple[str, int], _Row] = {}
    unmatched: list[_Row] = []
    for row in rows:
        key = _step_of(row, corpus, by_span, runs_of_trace, run_steps)
        if key is None:
            unmatched.append(row)
        elif key in matched and (matched[key].label, matched[key].decisive) != (row.label, row.decisive):
            problems.append(InputError(path, None, f"{row.named()} labels step {key[1]} of run {key[0]} {row.label}, "
                                                   f"but line {matched[key].line} labeled it {matched[key].label}."))
        else:
            matched[key] = row
    return matched, unmatched


def _step_of(row: _Row, corpus: str, by_span: dict, runs_of_trace: dict, run_steps: dict) -> tuple[str, int] | None:
    if row.run_id:
        run = row.run_id if row.run_id.startswith(f"{corpus}:") else f"{corpus}:{row.run_id}"
        runs = {run} if run in run_steps else set()
    else:
        runs = runs_of_trace.get(row.trace_id or "", set())
    if row.span_id:
        if row.run_id:
            return by_span.get((next(iter(runs)), row.span_id)) if runs else None
        return by_span.get((row.trace_id, row.span_id))
    if len(runs) == 1:  # a step index needs one run (a session run holds several traces)
        run = next(iter(runs))
        return (run, row.step_idx) if row.step_idx < run_steps[run] else None
    return None


# --------------------------------------------------------------------------- applying


def _apply(tables: dict[str, list[dict]], matched: dict[tuple[str, int], _Row], file_name: str) -> None:
    process = f"labels file ({file_name})"
    labeled_runs = {run for run, _ in matched}
    annotated_runs = set()
    for step in tables["steps"]:
        extra = json.loads(step["extra"] or "{}")
        if step["label_source"] == LABEL_SOURCE:  # an earlier labels file's: back to the trace's own label
            extra.pop("label_file", None)
            own = (extra.get("annotation") or {}).get("label")
            step["label"], step["label_source"] = own, ANNOTATION_SOURCE if own is not None else UNLABELED
            step["failure_mode"] = (extra.get("annotation") or {}).get("failure_mode") if own is not None else None
        row = matched.get((step["run_id"], step["step_idx"]))
        if row is not None:
            step["label"], step["label_source"], step["failure_mode"] = row.label, LABEL_SOURCE, row.failure_mode
            extra["label_file"] = {k: v for k, v in (("file", file_name), ("line", row.line), ("decisive", row.decisive),
                                                     ("note", row.note)) if v is not None}
        if step["label_source"] == ANNOTATION_SOURCE:
            annotated_runs.add(step["run_id"])
        step["extra"] = json_text(extra, ensure_ascii=False)
    for run in tables["runs"]:
        run["label_process"] = (process if run["run_id"] in labeled_runs else LABEL_PROCESS_ANNOTATIONS
                                if run["run_id"] in annotated_runs else LABEL_PROCESS_NONE)
    for corpus in tables["corpora"]:
        corpus["label_process"] = process
