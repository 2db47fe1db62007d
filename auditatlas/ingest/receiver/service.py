"""The receiver's state and its writer thread: spans in (journaled first), traces written when
idle or on close, the journal replayed at start."""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...arrow_memory import use_system_allocator
from ...errors import first_line
from ..otlp import check_corpus_name
from ..otlp_spans import Decoded, decode_body
from .bodies import Refused, inflate
from .held import Held
from .journal import Journal, JournalError
from .receiver_settings import Settings
from .writes import Written, stored_spans, write_traces

Say = Callable[[str], None]


@dataclass
class Accepted:
    kept: int
    rejected: list[str]  # one sentence per span left out
    full: bool = False  # refused whole for room (503)
    too_many: int = 0  # refused whole: more new spans than --max-spans (413)
    failed: str | None = None  # refused whole: the journal could not be written (503)


class Budget:
    """Bytes taken by requests being read and decoded; a request takes what it needs or is refused."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.taken = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            if self.taken + n > self.capacity:
                return False
            self.taken += n
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self.taken -= n


class Receiver:
    """Spans of corpus ``corpus`` held and written to the store at ``root``.

    ``start`` replays the journal and runs the writer thread; ``close`` stops it and writes
    every held span (the server calls both from its lifespan, so SIGTERM or Ctrl-C write before
    the process exits). A request is answered once its body is committed to the journal
    (:mod:`.journal`), so a 200 survives ``kill -9``.
    """

    def __init__(self, root: Path, corpus: str, settings: Settings = Settings(),  # noqa: B008 - Settings is frozen
                 origin: str = "OTLP/HTTP", say: Say = print) -> None:
        check_corpus_name(Path(root), corpus, "receive")  # one sentence (AtlasError) before any port opens
        # Arrow's buffers from malloc, as in every ingest process: the bundled mimalloc keeps
        # freed write buffers for reuse, and a receiver writing every second held ~100 MB more
        # with it (bench/README.md).
        use_system_allocator()
        self.root = Path(root)
        self.corpus = corpus
        self.settings = settings
        self.origin = origin
        self.say = say
        self.held = Held(settings.max_spans)
        self.decoding = Budget(settings.max_decoding)
        self.journal: Journal | None = Journal(self.root, corpus) if settings.journal else None
        self._accept_lock = threading.Lock()
        self._replaying = False
        self.writes = 0
        self._requests = itertools.count(1)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._retry_at = 0.0  # after a failed write, the next try waits until then
        self._next_at = 0.0  # after a write, the next one (unless memory presses) waits until then

    def request_name(self, client: str) -> str:
        return f"request {next(self._requests)} from {client}"

    def accept(self, decoded: Decoded, body: bytes, encoding: str, content_encoding: str = "identity") -> Accepted:
        """Hold a decoded request's spans; returns once the request's ``body`` (as received,
        ``content_encoding`` not undone: what the replay decodes again) is committed to the journal."""
        journal = self.journal
        with self._accept_lock:  # a record's number is known before its spans are held
            record = journal.reserve() if journal is not None else 0
            added = self.held.add(decoded.spans, record)
            if journal is not None and added.fresh:
                journal.enqueue(record, encoding, content_encoding, body)
            elif journal is not None:
                journal.abandon(record)
        if added.too_many:
            return Accepted(0, [], too_many=added.too_many)
        if added.full:
            self._wake.set()
            return Accepted(0, [], full=True)
        rejected = [p.message for p in decoded.rejected + added.rejected]  # the request is named once, by the caller
        if self.held.pressed():
            self._wake.set()
        if journal is not None:
            try:
                if added.fresh:
                    journal.wait(record)
                elif added.accepted:
                    journal.sync()  # repeats of spans an earlier request's record may still be committing
            except JournalError as exc:
                with self._write_lock:  # no write holds them: they leave memory, the exporter sends them again
                    self.held.withdraw(record)
                return Accepted(0, [], failed=str(exc))
        return Accepted(added.accepted, rejected)

    # -- the journal at start ---------------------------------------------------------------

    def replay(self) -> int:
        """Hold again what the journal holds and the store does not, then write it; the spans
        replayed. A span the store holds is not held twice: a trace whose stored spans all come
        back is held as written under its run (its next write replaces the run whole); the
        stored spans of any other trace are dropped."""
        if self.journal is None or not self.journal.count():
            return 0
        requests: list[tuple[int, list]] = []
        for record in self.journal.records():
            try:
                # Accepted once: a --max-body-mb lowered since does not refuse it now.
                raw = inflate(record.body, record.content_encoding, max(self.settings.max_body, 1 << 30))
            except Refused as refused:
                self.say(f"journal record {record.seq} cannot be read again ({refused.sentence}); it is kept in "
                         f"{self.journal.path}.")
                continue
            decoded = decode_body(raw, record.encoding, f"journal record {record.seq}")
            requests.append((record.seq, decoded.spans))
        traces = {s.trace_id for _, spans in requests for s in spans}
        stored = stored_spans(self.root, self.corpus, traces)
        back: dict[str, set[str]] = {}
        for _, spans in requests:
            for span in spans:
                back.setdefault(span.trace_id, set()).add(span.span_id)
        # A trace is held whole again when the journal still holds every span the store has of it, in one run.
        whole = {t for t, held in stored.items() if len(set(held.values())) == 1 and set(held) <= back.get(t, set())}
        replayed = 0
        chunk = max(1, self.settings.max_spans // 2)  # a record may hold more than a smaller cap allows
        self._replaying = True  # no record is deleted before every one is held again

        def in_store(span) -> bool:
            return span.span_id in stored.get(span.trace_id, {})

        try:
            for seq, spans in requests:
                kept = [s for s in spans if s.trace_id in whole or not in_store(s)]
                for i in range(0, len(kept), chunk):
                    part = kept[i:i + chunk]
                    added = self.held.add(part, seq, stored=in_store)
                    while added.full:  # restarted with a smaller --max-spans: write as it goes
                        if self.flush(force=True) is None:  # the store refused (said): try again shortly
                            time.sleep(min(1.0, max(0.05, self.settings.idle_s)))
                        added = self.held.add(part, seq, stored=in_store)
                    replayed += added.fresh
                    for trace_id in {s.trace_id for s in part} & whole:  # before any write: it replaces the run
                        self.held.stored_as(trace_id, next(iter(stored[trace_id].values())))
        finally:
            self._replaying = False
        waiting = self.held.pending_records()
        self.journal.forget([seq for seq, _ in requests if seq not in waiting])
        if replayed:
            self.say(f"replayed {replayed} span(s) of {len(requests)} journaled request(s) the store did not hold")
            self.flush(force=True)
        return replayed

    # -- writing ---------------------------------------------------------------------------

    def start(self) -> None:
        self.replay()
        self._thread = threading.Thread(target=self._loop, name="auditatlas-receiver-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        tick = max(0.05, min(1.0, self.settings.idle_s / 4))
        while not self._stop.is_set():
            self._wake.wait(tick)
            self._wake.clear()
            pressed = self.held.pressed()
            if not self._stop.is_set() and time.monotonic() >= (self._retry_at if pressed else self._next_at):
                self.flush(force=pressed)

    def flush(self, force: bool = False) -> Written | None:
        """Write the traces that are due (every unwritten one with ``force``); None if none was."""
        with self._write_lock:
            due = self.held.due(self.settings.idle_s, force)
            if not due:
                return None
            started = time.monotonic()
            try:
                written = write_traces(self.root, self.corpus, due, self.origin, notify=self.say)
            except Exception as exc:  # noqa: BLE001 - the writer must outlive a failed write: the spans stay held
                reason = first_line(exc)
                self.say(f"could not write {len(due)} trace(s) to corpus {self.corpus} ({reason}); "
                         f"they are held and tried again in {self.settings.idle_s:g} s.")
                self._retry_at = time.monotonic() + self.settings.idle_s
                return None
            released = self.held.written(due, written.run_ids)
            if self.journal is not None and not self._replaying:
                self.journal.forget(released)  # after the store's commit: what they brought is in it
            self.writes += 1
            # A write costs about its own spans, but now and then merges segments of the corpus
            # (store_segments): the writer rests as long as the last write took (unless memory
            # presses), which keeps it to half the time and lets each write take more traces.
            self._next_at = time.monotonic() + (time.monotonic() - started)
        for problem in written.problems:
            self.say(f"written with a problem: {problem}")
        reopened = f", {written.reopened} of them re-opened with late spans" if written.reopened else ""
        self.say(f"wrote {len(due)} traces ({written.n_spans} spans{reopened}) to corpus {self.corpus}")
        return written

    def close(self) -> None:
        """Stop the writer thread, then write whatever is held (``held.unwritten`` says what
        could not be)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.flush(force=True)
        if self.journal is not None:
            self.journal.close()  # what could not be written stays in it, replayed at the next start
