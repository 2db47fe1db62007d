"""Your own traces as OpenTelemetry spans (OTLP files), in the OpenInference or GenAI conventions.

``auditatlas ingest otlp PATH --corpus NAME [--group trace|session]``: every OTLP/JSON, JSONL
or protobuf file under PATH (gzip either way; :mod:`.otlp_spans` reads them) becomes corpus
NAME, which is also its store source, so several corpora of this format sit side by side.

Mapping (the table is in ``data/README.md``, "OTLP traces"; the attribute rules are in
:mod:`.otlp_mapping`):

- a trace is a run (``<corpus>:<trace id>``); ``--group session`` makes one run of every trace
  sharing a ``session.id`` / ``gen_ai.conversation.id`` (``<corpus>:session/<id>``);
- spans are steps in start-time order, a parent before its children on ties and always before
  them: a child that starts before its parent (clock skew) is placed right after it, and noted;
- parent links and span links are ``observed`` edges (``tool_call`` into a tool span,
  ``handoff`` where the agent changes, else ``child`` or ``link``);
- the run's outcome is its root spans' status (ERROR: failure, OK: success, else unknown);
- every attribute no rule used, the span's events, links, name, kinds and times are kept in
  the step's ``extra``; resource attributes in the run's.

Bad input is refused with one sentence per problem naming the file and span (and the store is
left as it was): not OTLP, no trace or span id, an attribute over the size limit, invalid
UTF-8, an empty export, two different spans under one span id, a cycle of parent links. A
parent that never arrived (its span is read as a root) and clock skew are notes.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import AtlasError, IngestFailed, InputError
from . import Batch, Context
from .kit.traces import (
    CHILD,
    HANDOFF,
    LABEL_PROCESS_NONE,
    LINK,
    OBSERVED,
    TOOL_CALL,
    UNLABELED,
    check_source_name,
    edge_row,
    extra_json,
)
from .otlp_mapping import (
    ANNOTATION_SOURCE,
    LABEL_PROCESS_ANNOTATIONS,
    OWN_FORMATS,
    TOOL_KIND,
    StepFacts,
    backbone,
    facts,
    session_of,
)
from .otlp_spans import Span, looks_like_otlp, otlp_files, read_files, read_spans, trace_ids

FORMAT = "otlp"
_SHOWN = 5  # spans named in one note before "and N more"
# Spans per batch a file ingest maps and writes at a time (read_batches): memory holds one batch
# of spans and rows, not the input. A trace is never split, so a batch may hold more.
BATCH_SPANS = 20_000
# Spans the commit's merge holds at a time, at most about: the run-id prefix that buckets the
# batches' parts (``_RunBucket``) is made one hex digit longer until a bucket's share of the
# input is under this, so the merge's memory stays flat as the input grows (one digit held a
# sixteenth of the input: ~190 MB over the batches' ~280 MB at a million spans).
BUCKET_SPANS = 25_000


def can_read(path: Path) -> bool:
    return looks_like_otlp(Path(path))


def read(path: Path | None, context: Context, corpus: str | None = None, group: str = "trace") -> Batch:
    """Every span under ``path`` as the runs, steps and edges of corpus ``corpus``."""
    if path is None or corpus is None:
        raise AtlasError("ingest otlp needs a PATH and --corpus NAME.")
    notes = check_corpus_name(context.store, corpus, "otlp")
    problems: list[InputError] = []
    spans = read_spans(Path(path), problems)
    if not problems and not spans:
        problems.append(InputError(path, None, "holds no spans (an empty export); the loaded source was kept."))
    mapped = map_spans(spans, corpus, str(path), group)
    problems.extend(mapped.problems)
    if problems:
        raise IngestFailed(problems)
    n_steps, n_edges = len(mapped.tables["steps"]), len(mapped.tables["edges"])
    notes.extend(mapped.notes)
    notes.insert(0, f"{mapped.n_runs} runs from {mapped.n_traces} traces, {n_steps} steps, {n_edges} observed edges.")
    files = {s.file for s in spans}
    return Batch(source=corpus, tables=mapped.tables, notes=notes, meta={"files": len(files), "group": group})


def read_batches(path: Path | None, context: Context, corpus: str | None = None, group: str = "trace",
                 batch_spans: int | None = None) -> Batch:
    """What :func:`read` reads, as a stream: ``Batch.parts`` maps and yields the input a batch of
    whole traces at a time (files that share a trace go in one batch), so the ingest's memory is
    bounded by the batch, not the input. The rows are :func:`read`'s; every problem of every
    batch is collected and raised (as :class:`IngestFailed`) when the stream ends, before the
    store writer commits, so a refused input writes nothing. The notes are complete once the
    parts are exhausted. ``--group session`` reads the input as one batch: a session's traces
    may sit in any files.
    """
    if path is None or corpus is None:
        raise AtlasError("ingest otlp needs a PATH and --corpus NAME.")
    notes = check_corpus_name(context.store, corpus, "otlp")
    path = Path(path)
    files = otlp_files(path)
    batches, n_spans = _file_batches(files, batch_spans or BATCH_SPANS) if group == "trace" else ([files], 0)
    batch = Batch(source=corpus, tables={}, notes=notes, meta={"files": len(files), "group": group})
    batch.parts = _parts(path, batches, corpus, group, notes)
    batch.bucket_of = _RunBucket(corpus, bucket_width(n_spans))
    return batch


def bucket_width(n_spans: int) -> int:
    """How many leading characters of a trace id make its run's sort bucket: the fewest that
    leave about ``BUCKET_SPANS`` or fewer spans per bucket (trace ids are random hex, so each
    digit cuts a bucket sixteen ways); at least one."""
    width = 1
    while n_spans > BUCKET_SPANS * 16 ** width:
        width += 1
    return width


@dataclass(frozen=True)
class _RunBucket:
    """A run's sort bucket: the first ``width`` characters of its trace id. Batches come in file
    order, so their run ids (``<corpus>:<trace id>``, random hex) interleave; bucketed parts let
    the commit merge one bucket of the source at a time instead of sorting all of it (measured
    at 300,000 spans: that sort alone took the ingest from 340 MB to 750 MB). A prefix sorts as
    the ids it starts do, which is what a bucket must."""

    corpus: str
    width: int = 1

    def __call__(self, run_id: str) -> str:
        start = len(self.corpus) + 1
        return run_id[start:start + self.width]


def _parts(path: Path, batches: list[list[Path]], corpus: str, group: str, notes: list[str]) -> Iterator[dict]:
    problems: list[InputError] = []
    if not batches:
        read_spans(path, problems)  # the sentence for a path without OTLP files
    n_spans = n_traces = n_runs = n_steps = n_edges = labeled = 0
    for files in batches:
        spans = read_files(path, files, problems)
        mapped = map_spans(spans, corpus, str(path), group, note_labels=False)
        problems.extend(mapped.problems)
        notes.extend(mapped.notes)
        n_spans += len(spans)
        n_traces, n_runs = n_traces + mapped.n_traces, n_runs + mapped.n_runs
        n_steps, n_edges = n_steps + len(mapped.tables["steps"]), n_edges + len(mapped.tables["edges"])
        labeled += mapped.labeled
        del spans
        if not problems:  # after the first problem the rest is only read for its problems
            yield {name: rows for name, rows in mapped.tables.items() if name != "corpora"}
    if not problems and not n_spans:
        problems.append(InputError(path, None, "holds no spans (an empty export); the loaded source was kept."))
    if problems:
        raise IngestFailed(problems)
    if labeled:
        notes.append(f"{labeled} step(s) labeled by their annotation.* attributes.")
    notes.insert(0, f"{n_runs} runs from {n_traces} traces, {n_steps} steps, {n_edges} observed edges.")
    process = LABEL_PROCESS_ANNOTATIONS if labeled else LABEL_PROCESS_NONE
    yield {"corpora": [_corpus_row(corpus, str(path), process, n_runs)]}


def _file_batches(files: list[Path], batch_spans: int) -> tuple[list[list[Path]], int]:
    """``files`` cut into batches of about ``batch_spans`` spans, files sharing a trace kept in one
    batch (in file order), and the spans they hold. A file whose trace ids cannot be read cheaply
    is read with all files (the count is then 0: not known before reading)."""
    ids: list[set[str]] = []
    sizes: list[int] = []
    for file in files:
        found = trace_ids(file)
        if found is None:
            return ([files] if files else []), 0
        ids.append(found[0])
        sizes.append(found[1])
    import networkx as nx  # here: only a batched file ingest needs it

    # Files sharing a trace are one group: the connected components of files and their traces.
    graph = nx.Graph()
    graph.add_nodes_from(range(len(files)))
    graph.add_edges_from((i, ("trace", trace)) for i, found in enumerate(ids) for trace in found)
    groups = [sorted(n for n in component if isinstance(n, int)) for component in nx.connected_components(graph)]
    batches: list[list[Path]] = []
    current: list[Path] = []
    weight = 0
    for members in sorted(groups):  # in file order (groups are disjoint: by their first file)
        current.extend(files[i] for i in members)
        weight += sum(sizes[i] for i in members)
        if weight >= batch_spans:
            batches.append(current)
            current, weight = [], 0
    if current:
        batches.append(current)
    return batches, sum(sizes)


@dataclass
class Mapped:
    """Spans mapped onto the schema: the rows, and what was found on the way."""

    tables: dict[str, list[dict]]  # corpora, runs, steps, edges
    problems: list[InputError]  # a file ingest refuses on any of these; the receiver reports them
    notes: list[str]
    n_traces: int
    n_runs: int
    labeled: int = 0  # steps labeled by annotation.* attributes


def map_spans(spans: list[Span], corpus: str, origin: str, group: str = "trace", note_labels: bool = True) -> Mapped:
    """The rows of ``spans`` as corpus ``corpus`` (the one mapping of file ingest and receiver).

    Duplicates are kept once (identical) or reported (different); a cycle of parent links is
    reported and broken; a parent that never arrived makes its span a root (noted). Spans are
    changed in place on the way (a lost parent is cleared): pass copies to keep the originals.
    """
    problems: list[InputError] = []
    notes: list[str] = []
    traces = _traces(spans, problems, notes)
    runs = _runs(traces, corpus, group, notes)
    tables, labeled = _tables(runs, corpus, origin, notes)
    if labeled and note_labels:
        notes.append(f"{labeled} step(s) labeled by their annotation.* attributes.")
    return Mapped(tables, problems, notes, len(traces), len(runs), labeled)


def check_corpus_name(store: Path, corpus: str, verb: str) -> list[str]:
    """Refuse a corpus name that is no store source name or belongs to another import; the notes
    a replacement calls for (labels a previous labels ingest put on this corpus)."""
    entry = check_source_name(store, corpus, OWN_FORMATS, "an OTLP corpus")
    if verb == "otlp" and entry is not None and entry.get("format") == "labels":
        return [f"corpus '{corpus}' held the labels of {entry.get('origin')}; they are replaced by these traces' "
                f"own (run `auditatlas ingest labels {entry.get('origin')} --corpus {corpus}` again to keep them)."]
    return []


# --------------------------------------------------------------------------- traces


@dataclass
class _Trace:
    trace_id: str
    spans: list[Span]
    by_id: dict[str, Span] = field(default_factory=dict)


def _traces(spans: list[Span], problems: list[InputError], notes: list[str]) -> list[_Trace]:
    """Spans grouped by trace (order of first appearance); duplicates, cycles and lost parents checked."""
    grouped: dict[str, _Trace] = {}
    for span in spans:
        grouped.setdefault(span.trace_id, _Trace(span.trace_id, [])).spans.append(span)
    repeats: list[Span] = []
    for trace in grouped.values():
        kept = []
        for span in trace.spans:
            seen = trace.by_id.get(span.span_id)
            if seen is None:
                trace.by_id[span.span_id] = span
                kept.append(span)
            elif _same(seen, span):
                repeats.append(span)  # exported twice (an exporter retry): one step
            else:
                problems.append(InputError(span.file, None, f"{_at(span)}{span.label()} of trace {span.trace_id} reuses "
                                                            f"the span id of '{seen.name}' in {seen.file}{_in(seen)} with "
                                                            "different content; span ids must be unique in a trace."))
        trace.spans = kept
        _check_cycles(trace, problems)
        _note_orphans(trace, notes)
    if repeats:
        notes.append(_spans_note(repeats, "appear(s) twice with identical content (kept once)"))
    return list(grouped.values())


def _same(a: Span, b: Span) -> bool:
    return a.same_as(b)


def _check_cycles(trace: _Trace, problems: list[InputError]) -> None:
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for start in trace.spans:
        path: list[str] = []
        sid: str | None = start.span_id
        while sid is not None and sid in trace.by_id and state.get(sid) != 2:
            if state.get(sid) == 1:
                loop = path[path.index(sid):] + [sid]
                first = trace.by_id[loop[0]]
                problems.append(InputError(first.file, None, f"trace {trace.trace_id}: the parent links of spans "
                                                             f"{' -> '.join(loop)} form a cycle; a trace is a tree."))
                for s in loop:
                    trace.by_id[s].parent_id = None  # reported once; the walk goes on to other spans
                break
            state[sid] = 1
            path.append(sid)
            sid = trace.by_id[sid].parent_id
        for s in path:
            state[s] = 2


def _note_orphans(trace: _Trace, notes: list[str]) -> None:
    orphans = [s for s in trace.spans if s.parent_id is not None and s.parent_id not in trace.by_id]
    if orphans:
        notes.append(_spans_note(orphans, "name(s) a parent span that never arrived; read as root(s)",
                                 lambda s: f" (parent {s.parent_id})"))
        for span in orphans:
            span.missing_parent, span.parent_id = span.parent_id, None


def _spans_note(spans: list[Span], what: str, detail: Callable[[Span], str] = lambda s: "") -> str:
    by_file: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_file[span.file].append(span)
    parts = []
    for file, items in by_file.items():
        named = ", ".join(f"{s.label()}{detail(s)}" for s in items[:_SHOWN])
        more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
        parts.append(f"{file}: {named}{more}")
    return f"{'; '.join(parts)} {what}."


def _at(span: Span) -> str:
    return f"{span.where}: " if span.where else ""


def _in(span: Span) -> str:
    return f" ({span.where})" if span.where else ""


# --------------------------------------------------------------------------- runs


@dataclass
class _Run:
    run_id: str
    traces: list[_Trace]
    session: str | None = None


def _runs(traces: list[_Trace], corpus: str, group: str, notes: list[str]) -> list[_Run]:
    if group == "trace":
        return [_Run(f"{corpus}:{t.trace_id}", [t]) for t in traces]
    runs: dict[str, _Run] = {}
    split = []
    for trace in traces:
        sessions = list(dict.fromkeys(s for s in map(session_of, trace.spans) if s is not None))
        if len(sessions) > 1:
            split.append(trace.trace_id)
        key = f"{corpus}:session/{sessions[0]}" if sessions else f"{corpus}:{trace.trace_id}"
        runs.setdefault(key, _Run(key, [], sessions[0] if sessions else None)).traces.append(trace)
    if split:
        notes.append(f"{len(split)} trace(s) carry more than one session id and were put in the first one's run: "
                     f"{', '.join(split[:_SHOWN])}.")
    return list(runs.values())


def _ordered(spans: list[Span]) -> tuple[list[Span], list[Span]]:
    """Steps in start-time order, every parent before its children; and the spans that started
    before their parent (placed right after it)."""
    children: dict[tuple[str, str] | None, list[Span]] = defaultdict(list)
    for span in spans:
        children[(span.trace_id, span.parent_id) if span.parent_id is not None else None].append(span)
    effective: dict[tuple[str, str], tuple[int, int]] = {}
    skewed: list[Span] = []
    stack = [(root, 0, 0) for root in children[None]]
    while stack:
        span, parent_start, depth = stack.pop()
        start = span.start_ns or parent_start
        if depth and span.start_ns and start < parent_start:
            skewed.append(span)
        start = max(start, parent_start)
        effective[(span.trace_id, span.span_id)] = (start, depth)
        stack.extend((c, start, depth + 1) for c in children[(span.trace_id, span.span_id)])
    ordered = sorted(spans, key=lambda s: (*effective[(s.trace_id, s.span_id)], s.start_ns or 0, s.order))
    return ordered, skewed


# --------------------------------------------------------------------------- rows


def _tables(runs: list[_Run], corpus: str, origin: str, notes: list[str]) -> tuple[dict[str, list[dict]], int]:
    run_rows, step_rows, edge_rows = [], [], []
    skewed: list[Span] = []
    forward_links: list[Span] = []
    labeled = 0
    for run in runs:
        ordered, late = _ordered([s for t in run.traces for s in t.spans])
        skewed.extend(late)
        index = {(s.trace_id, s.span_id): i for i, s in enumerate(ordered)}
        step_facts = [facts(s) for s in ordered]
        agents = _agents(ordered, step_facts, index)
        outcome = _outcome(run)
        steps = [_step_row(run, corpus, i, s, f, agents[i], outcome) for i, (s, f) in enumerate(zip(ordered, step_facts))]
        labeled += sum(r["label"] is not None for r in steps)
        step_rows.extend(steps)
        edges, forward = _edge_rows(run, corpus, ordered, step_facts, agents, index)
        edge_rows.extend(edges)
        forward_links.extend(forward)
        run_rows.append(_run_row(run, corpus, ordered, step_facts, outcome, any(r["label"] is not None for r in steps)))
    if skewed:
        notes.append(_spans_note(skewed, "start(s) before the parent span (clock skew); placed right after the parent",
                                 lambda s: f" (parent {s.parent_id})"))
    if forward_links:
        notes.append(_spans_note(forward_links, "link(s) to a span that starts later; the link is kept in the step's "
                                                "extra, not drawn as an edge (an edge points back in time)"))
    label_process = LABEL_PROCESS_ANNOTATIONS if labeled else LABEL_PROCESS_NONE
    return {"corpora": [_corpus_row(corpus, origin, label_process, len(runs))], "runs": run_rows,
            "steps": step_rows, "edges": edge_rows}, labeled


def _agents(ordered: list[Span], step_facts: list[StepFacts], index: dict) -> list[str | None]:
    """Each step's agent: its own name, else the nearest ancestor's, else the service name.

    Parents come first in ``ordered``, so one pass sees every ancestor's agent already.
    """
    out: list[str | None] = []
    for span, f in zip(ordered, step_facts):
        parent = index.get((span.trace_id, span.parent_id)) if span.parent_id else None
        inherited = out[parent] if parent is not None else None
        service = span.resource.get("service.name")
        out.append(f.own_agent or inherited or (service if isinstance(service, str) and service else None))
    return out


def _outcome(run: _Run) -> str:
    roots = [s for t in run.traces for s in t.spans if s.parent_id is None]
    if any(s.status == "ERROR" for s in roots):
        return "failure"
    if any(s.status == "OK" for s in roots):
        return "success"
    return "unknown"


def _duration(span: Span) -> float | None:
    if span.start_ns and span.end_ns and span.end_ns >= span.start_ns:
        return (span.end_ns - span.start_ns) / 1e9
    return None


def _step_row(run: _Run, corpus: str, i: int, span: Span, f: StepFacts, agent: str | None, outcome: str) -> dict:
    annotation = f.annotation or {}
    label = annotation.get("label")
    extra = {
        "trace_id": span.trace_id, "parent_span_id": span.parent_id, "name": span.name, "span_kind": span.kind,
        "kind": f.kind, "status": span.status, "status_message": span.status_message,
        "start_time_unix_nano": span.start_ns, "end_time_unix_nano": span.end_ns, "models": f.models,
        "file": span.file, "scope": span.scope or None,
        "missing_parent": span.missing_parent,
        "attributes": {k: v for k, v in span.attrs.items() if k not in f.used},
        "events": span.events or None, "links": span.links or None,
        "annotation": f.annotation,
    }
    return {
        "run_id": run.run_id, "corpus": corpus, "step_idx": i, "step_id": span.span_id, "agent": agent,
        "action": f.action, "scope": run.run_id, "scope_success": None if outcome == "unknown" else outcome == "success",
        "text_in": f.text_in, "text_out": f.text_out, "tokens_in": f.tokens_in, "tokens_out": f.tokens_out,
        "duration_s": _duration(span), "is_tool": f.kind == TOOL_KIND, "error_code": f.error_code,
        "failure_mode": annotation.get("failure_mode") if label is not None else None,
        "label": label, "label_source": ANNOTATION_SOURCE if label is not None else UNLABELED,
        "extra": extra_json(extra),
    }


def _edge_kind(dst: StepFacts, src_agent: str | None, dst_agent: str | None, default: str) -> str:
    if dst.kind == TOOL_KIND:
        return TOOL_CALL
    if src_agent != dst_agent:
        return HANDOFF
    return default


def _edge_rows(run: _Run, corpus: str, ordered: list[Span], step_facts: list[StepFacts], agents: list,
               index: dict) -> tuple[list[dict], list[Span]]:
    edges: dict[tuple[int, int], str] = {}
    forward: list[Span] = []
    for dst, span in enumerate(ordered):
        if span.parent_id is not None and (src := index.get((span.trace_id, span.parent_id))) is not None:
            edges.setdefault((src, dst), _edge_kind(step_facts[dst], agents[src], agents[dst], CHILD))
        for link in span.links:
            src = index.get((link.get("trace_id"), link.get("span_id")))
            if src is None or src == dst:
                continue  # a link outside the run stays in the step's extra
            if src > dst:
                forward.append(span)
                continue
            edges.setdefault((src, dst), _edge_kind(step_facts[dst], agents[src], agents[dst], LINK))
    return [edge_row(run.run_id, corpus, s, d, k, OBSERVED) for (s, d), k in sorted(edges.items())], forward


def run_name(roots: list[Span], spans: list[Span]) -> str | None:
    """What a list calls the run (its id is a random trace id): its first root span's name and
    the time the run started, UTC to the second, e.g. ``checkout-agent · 2026-03-02 08:04:11``."""
    if not roots:
        return None
    first = min(roots, key=lambda s: (s.start_ns is None, s.start_ns or 0, s.order))
    starts = [s.start_ns for s in spans if s.start_ns]
    if not starts:
        return first.name
    started = datetime.fromtimestamp(min(starts) / 1e9, timezone.utc)
    return f"{first.name} · {started:%Y-%m-%d %H:%M:%S}"


def _run_row(run: _Run, corpus: str, ordered: list[Span], step_facts: list[StepFacts], outcome: str,
             labeled: bool) -> dict:
    models = Counter(f.models[0] for f in step_facts if f.models)
    resources = list({json.dumps(s.resource, sort_keys=True): s.resource for s in ordered if s.resource}.values())
    roots = [s for s in ordered if s.parent_id is None]
    services = list(dict.fromkeys(str(r["service.name"]) for r in resources if r.get("service.name")))
    extra = {"trace_ids": [t.trace_id for t in run.traces], "session_id": run.session, "models": dict(models),
             "root_spans": [s.name for s in roots], "services": services, "resources": resources,
             "run_name": run_name(roots, ordered)}
    return {
        "run_id": run.run_id, "corpus": corpus, "source_file": ordered[0].file if ordered else None,
        "backbone": backbone(models), "domain": None, "difficulty": None, "temperature": None,
        "task_id": run.session or run.traces[0].trace_id, "outcome": outcome, "n_steps": len(ordered),
        "label_process": LABEL_PROCESS_ANNOTATIONS if labeled else LABEL_PROCESS_NONE,
        "extra": extra_json(extra, drop_empty=True),
    }


def _corpus_row(corpus: str, origin: str, label_process: str, n_runs: int) -> dict:
    return {
        "corpus": corpus, "title": corpus, "kind": "real", "label_process": label_process,
        "description": (f"Your own traces: {n_runs} runs read from OpenTelemetry spans (OTLP) in {Path(origin).name}. "
                        "Steps are spans; agents, models, tokens and text come from the OpenInference or GenAI "
                        "attributes; edges are the recorded parent and span links."),
    }
