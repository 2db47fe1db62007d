"""Received spans held in bounded memory until their trace is written, and a while after.

A trace is *unwritten* while it has spans the store does not hold yet, and *written* once the
store holds all of them. Written traces stay held while there is room: a span that arrives late
(a root span ends last, and a batch exporter sends it seconds after its children) re-opens its
trace, which is then mapped whole again and replaces its run, exactly as a file holding every
span would have mapped it.

The cap counts spans, written and unwritten. Room is made by forgetting written traces, least
recently seen first; when unwritten spans alone fill the cap the request is refused whole (the
HTTP layer answers 503 with Retry-After, which OTLP exporters retry) and the writer is asked to
write at once instead of waiting for traces to go idle. A request bringing more new spans than
the whole cap could never be held: it is refused as too large (413), never as "try again".

Each unwritten span remembers the journal record that brought it (:mod:`.journal`); a record
is *released* once the store holds every span it brought, and only then deleted.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import InputError
from ..otlp_spans import Span

# Over this share of the cap the writer writes every unwritten trace, idle or not.
PRESSURE = 0.8


@dataclass
class HeldTrace:
    trace_id: str
    spans: dict[str, Span] = field(default_factory=dict)  # by span id, in arrival order
    last_seen: float = 0.0
    unwritten: int = 0  # spans the store does not hold yet
    run_id: str | None = None  # the run the store holds it as, once written
    records: dict[str, int] = field(default_factory=dict)  # unwritten span id -> its journal record


@dataclass
class Added:
    """What :meth:`Held.add` did with one request's spans."""

    accepted: int = 0  # new spans, plus identical repeats of held ones (an exporter's retry)
    rejected: list[InputError] = field(default_factory=list)
    full: bool = False  # nothing was added: the cap is reached by spans not yet written
    too_many: int = 0  # nothing was added: this many new spans are more than the whole cap
    fresh: int = 0  # new spans (not repeats), each now waiting for its record's release


@dataclass
class Due:
    """A trace handed to the writer: copies of its spans as they were when it was taken."""

    trace_id: str
    spans: list[Span]
    run_id: str | None  # the run it replaces (a re-opened trace), or None for a new one
    taken: list[tuple[str, int]]  # the unwritten spans taken (span id, journal record)

    @property
    def unwritten(self) -> int:
        """How many of ``spans`` the store did not hold when it was taken."""
        return len(self.taken)


class Held:
    """The held traces; every method is safe to call from the server's and the writer's threads."""

    def __init__(self, max_spans: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_spans = max_spans
        self.clock = clock
        self._traces: OrderedDict[str, HeldTrace] = OrderedDict()  # least recently seen first
        self._spans = 0
        self._unwritten = 0
        self._order = 0
        self._refused_since_write = False
        self._lock = threading.Lock()
        self._pending: dict[int, int] = {}  # journal record -> its spans not yet in the store

    @property
    def spans(self) -> int:
        return self._spans

    @property
    def unwritten(self) -> int:
        return self._unwritten

    def add(self, spans: list[Span], record: int = 0, stored: Callable[[Span], bool] | None = None) -> Added:
        """Hold one request's spans (brought by journal record ``record``), all or none: a repeat
        of a held span with the same content is accepted once, one with different content under
        a held span id is rejected. ``stored(span)``: the store holds it already (a replay at
        start), so it is held as written."""
        out = Added()
        with self._lock:
            fresh: list[Span] = []
            seen: dict[tuple[str, str], Span] = {}
            for span in spans:
                trace = self._traces.get(span.trace_id)
                other = seen.get((span.trace_id, span.span_id)) or (trace.spans.get(span.span_id) if trace else None)
                if other is None:
                    seen[(span.trace_id, span.span_id)] = span
                    fresh.append(span)
                elif other.same_as(span):
                    out.accepted += 1
                else:
                    out.rejected.append(InputError(span.file, None, f"{span.label()} of trace {span.trace_id} reuses "
                                                                    f"the span id of '{other.name}' ({other.file}) with "
                                                                    "different content; span ids must be unique in a "
                                                                    "trace."))
            if len(fresh) > self.max_spans:
                return Added(too_many=len(fresh))
            if not self._make_room(len(fresh)):
                self._refused_since_write = True
                return Added(full=True)
            now = self.clock()
            for span in fresh:
                span.order, self._order = self._order, self._order + 1
                trace = self._traces.get(span.trace_id)
                if trace is None:
                    trace = self._traces[span.trace_id] = HeldTrace(span.trace_id)
                trace.spans[span.span_id] = span
                trace.last_seen = now
                self._traces.move_to_end(span.trace_id)
                if stored is not None and stored(span):
                    continue
                trace.unwritten += 1
                trace.records[span.span_id] = record
                self._unwritten += 1
                out.fresh += 1
            self._spans += len(fresh)
            out.accepted += len(fresh)
            if out.fresh:
                self._pending[record] = self._pending.get(record, 0) + out.fresh
        return out

    def pending_records(self) -> set[int]:
        """The journal records some of whose spans the store does not hold yet."""
        with self._lock:
            return set(self._pending)

    def stored_as(self, trace_id: str, run_id: str) -> None:
        """The store holds trace ``trace_id`` as run ``run_id`` (a replay at start): its next
        write replaces that run, as a re-opened trace's does."""
        with self._lock:
            trace = self._traces.get(trace_id)
            if trace is not None:
                trace.run_id = run_id

    def _make_room(self, n: int) -> bool:
        """Forget written traces (least recently seen first) until ``n`` more spans fit."""
        if n > self.max_spans - self._unwritten:
            return False
        for trace_id in [t for t, trace in self._traces.items() if trace.unwritten == 0]:
            if self._spans + n <= self.max_spans:
                break
            self._spans -= len(self._traces.pop(trace_id).spans)
        return self._spans + n <= self.max_spans

    def pressed(self) -> bool:
        """Whether the writer should write now, idle or not: a request was refused for room, or
        unwritten spans fill most of the cap."""
        return self._refused_since_write or self._unwritten >= PRESSURE * self.max_spans

    def due(self, idle_s: float, force: bool = False) -> list[Due]:
        """The unwritten traces idle for ``idle_s`` seconds (every unwritten one with ``force``)."""
        now = self.clock()
        with self._lock:
            return [Due(t.trace_id, [dataclasses.replace(s) for s in t.spans.values()], t.run_id, list(t.records.items()))
                    for t in self._traces.values() if t.unwritten and (force or now - t.last_seen >= idle_s)]

    def written(self, due: list[Due], run_ids: dict[str, str]) -> list[int]:
        """The store now holds ``due`` (as ``run_ids`` by trace id); spans that arrived while it was
        written stay unwritten. Returns the journal records released: every span they brought
        is in the store now."""
        released: list[int] = []
        with self._lock:
            self._refused_since_write = False
            for item in due:
                for _, record in item.taken:
                    self._pending[record] -= 1
                    if not self._pending[record]:
                        del self._pending[record]
                        released.append(record)
                trace = self._traces.get(item.trace_id)
                if trace is None:
                    continue
                for span_id, _ in item.taken:
                    trace.records.pop(span_id, None)
                trace.unwritten -= item.unwritten
                self._unwritten -= item.unwritten
                trace.run_id = run_ids[item.trace_id]
        return released

    def withdraw(self, record: int) -> int:
        """Take back the unwritten spans journal record ``record`` brought (its commit failed, so
        its request is refused and will be sent again); call with no write in progress."""
        gone = 0
        with self._lock:
            for trace_id in list(self._traces):
                trace = self._traces[trace_id]
                ids = [span_id for span_id, r in trace.records.items() if r == record]
                for span_id in ids:
                    del trace.records[span_id]
                    del trace.spans[span_id]
                trace.unwritten -= len(ids)
                gone += len(ids)
                if not trace.spans:
                    del self._traces[trace_id]
            self._spans -= gone
            self._unwritten -= gone
            self._pending.pop(record, None)
        return gone
