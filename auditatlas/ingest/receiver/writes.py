"""One receiver write: traces mapped as `ingest otlp` maps them, added to the corpus's source.

Why each write makes a new version of the whole source: a store source is the unit a write
replaces atomically (one manifest switch), and the corpus name is its source (``ingest otlp``
and ``ingest labels`` rely on that), so new traces cannot land beside the old ones as a source
of their own. Each write therefore carries the source's rows forward, leaves out the runs of
re-opened traces, adds the new runs and switches the result in. A reader sees the old or the
new source whole; a writer killed mid-way leaves a staging folder the next write removes; the
earlier traces are never at risk.

Why a write costs its own spans, not the corpus: the runs, steps and edges are carried as sorted
segments (``SourceWriter.carry_segments``, ``auditatlas/store_segments.py``): committed parts
are hard-linked, a part holding a re-opened trace's run is written again without it, the new
runs become a segment of their own, and only segments of similar size are merged, streamed, so
each row is written again O(log n) times over the corpus's life. Before (sorting the whole
source into one run order at every write, since ``<corpus>:<trace id>`` ids fall between the
held ones) a write took time and memory in proportion to the corpus (bench/README.md, session
17). Only the rows a write adds are checked against the store's invariants.

Left in proportion to the corpus, each small: the ``run_id`` column of ``runs`` is scanned, one
part at a time, for the ids this write's traces could collide with (``source_run_ids``: only
those are kept, so a receiver running all day does not hold every id of its corpus), and every
carried part's Parquet footer is read (its rows, and its run_id statistics for re-opened traces). A write that
merges every segment (the geometric rule's carry, now and then) costs the corpus once.

Run ids are the file mapping's (``<corpus>:<trace id>``). A trace that is not held any more
(forgotten for room, or written by an earlier receiver process) and receives spans again cannot
be mapped whole: its new spans become a run of their own, ``<corpus>:<trace id>~2`` (then ~3...).
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ... import store
from ...duck import connect as duck_connect
from ...store_parts import table_parts
from ..otlp import FORMAT, LABEL_PROCESS_ANNOTATIONS, LABEL_PROCESS_NONE, map_spans
from .held import Due


@dataclass
class Written:
    """What a write put in the store."""

    run_ids: dict[str, str]  # trace id -> the run it is stored as
    n_spans: int
    n_runs: int  # runs the corpus holds after the write
    reopened: int  # traces whose run was replaced with more spans
    problems: list[str] = field(default_factory=list)  # found in mapping (a cycle of parents), reported
    notes: list[str] = field(default_factory=list)
    rewritten: int = 0  # rows of earlier writes written again (segments merged, runs dropped from a part)


def write_traces(root: Path, corpus: str, due: list[Due], origin: str,
                 notify: Callable[[str], None] | None = None) -> Written:
    """Add (or replace) the runs of ``due`` in the source of ``corpus``, atomically."""
    with store.SourceWriter(root, corpus, notify=notify) as writer:
        # Only the ids this write could collide with: its traces' own and their later runs'.
        held = store.source_run_ids(root, corpus, {f"{corpus}:{item.trace_id}" for item in due}
                                    | {item.run_id for item in due if item.run_id is not None})
        run_ids = _run_ids(corpus, due, held)
        spans = [s for item in due for s in item.spans]
        mapped = map_spans(spans, corpus, origin)
        tables = _renamed(mapped.tables, {f"{corpus}:{item.trace_id}": run_ids[item.trace_id] for item in due})
        replaced = {item.run_id for item in due if item.run_id is not None and item.run_id in held}
        previous = _previous(root, corpus)
        carried = writer.carry_segments(drop_runs=replaced, skip=("corpora",))
        n_runs = carried["runs"] + len(tables["runs"])
        tables["corpora"] = [_corpus_row(corpus, n_runs, previous.get("corpus_row"), tables["runs"])]
        writer.append(tables)
        writer.commit(_meta(previous.get("entry"), origin))
    return Written(run_ids, len(spans), n_runs, len(replaced), [str(p) for p in mapped.problems], mapped.notes,
                   rewritten=sum(writer.rewritten.values()))


def _run_ids(corpus: str, due: list[Due], held: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    taken = set(held)
    for item in due:
        if item.run_id is not None and item.run_id in held:
            out[item.trace_id] = item.run_id  # re-opened: the same run, mapped whole again
            continue
        run_id, n = f"{corpus}:{item.trace_id}", 1
        while run_id in taken:
            n += 1
            run_id = f"{corpus}:{item.trace_id}~{n}"
        taken.add(run_id)
        out[item.trace_id] = run_id
    return out


def _renamed(tables: dict[str, list[dict]], names: dict[str, str]) -> dict[str, list[dict]]:
    """The mapping's rows with each run under the id this write gives it (and its scope, the run)."""
    for name in ("runs", "steps", "edges"):
        for row in tables[name]:
            row["run_id"] = names.get(row["run_id"], row["run_id"])
            if name == "steps":
                row["scope"] = names.get(row["scope"], row["scope"])
    return tables


def _previous(root: Path, corpus: str) -> dict[str, Any]:
    """The source's manifest entry and its corpora row, before this write."""
    entry = store.read_manifest(root)["sources"].get(corpus)
    if entry is None:
        return {}
    rows = [r for part in table_parts(root / str(entry["dir"]), "corpora")
            for r in pq.read_table(part).to_pylist() if r.get("corpus") == corpus]
    return {"entry": entry, "corpus_row": rows[0] if rows else None}


def _corpus_row(corpus: str, n_runs: int, previous: dict | None, new_runs: list[dict]) -> dict:
    """The corpus row: the previous one's label process kept (a labels file's, or span
    annotations), annotations named once new runs bring them."""
    process = (previous or {}).get("label_process") or LABEL_PROCESS_NONE
    if process == LABEL_PROCESS_NONE and any(r["label_process"] == LABEL_PROCESS_ANNOTATIONS for r in new_runs):
        process = LABEL_PROCESS_ANNOTATIONS
    return {
        "corpus": corpus, "title": corpus, "kind": "real", "label_process": process,
        "description": (f"Your own traces: {n_runs} runs received as OpenTelemetry spans (OTLP/HTTP, "
                        "`auditatlas receive`). Steps are spans; agents, models, tokens and text come from the "
                        "OpenInference or GenAI attributes; edges are the recorded parent and span links."),
    }


def _meta(entry: dict | None, origin: str) -> dict[str, Any]:
    """The manifest entry's own keys: a labels file's record kept, the receiver named."""
    kept = store.source_meta(entry)
    if kept.get("format") == "labels":  # its origin is the labels file, which `ingest otlp` names
        return {**kept, "received": origin}
    return {**kept, "format": FORMAT, "origin": origin, "group": kept.get("group", "trace"), "received": origin}


def stored_spans(root: Path, corpus: str, trace_ids: Collection[str]) -> dict[str, dict[str, str]]:
    """The spans of ``trace_ids`` the corpus's source holds: ``{trace id: {span id: run id}}``.

    What a replay of the journal at start needs to keep nothing twice: a step's ``step_id`` is
    its span id, and a trace's runs are ``<corpus>:<trace id>`` and its continuations ``~2``...
    """
    entry = store.read_manifest(root)["sources"].get(corpus)
    if entry is None or not trace_ids:
        return {}
    files = [str(p) for p in table_parts(Path(root) / str(entry["dir"]), "steps")]
    if not files:
        return {}
    con = duck_connect()
    try:
        found = con.execute("SELECT s.run_id, s.step_id FROM read_parquet($files) s "
                            "JOIN (SELECT unnest($runs::VARCHAR[]) AS run_id) w ON split_part(s.run_id, '~', 1) = w.run_id",
                            {"files": files, "runs": [f"{corpus}:{t}" for t in trace_ids]}).fetchall()
    finally:
        con.close()
    out: dict[str, dict[str, str]] = {}
    prefix = len(corpus) + 1
    for run_id, step_id in found:
        out.setdefault(run_id[prefix:].split("~", 1)[0], {})[step_id] = run_id
    return out
