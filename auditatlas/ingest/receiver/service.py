"""The receiver's state and its writer thread: spans in, traces written when idle or on close."""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..otlp import check_corpus_name
from ..otlp_spans import Decoded
from .held import Held
from .writes import Written, write_traces

Say = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    idle_s: float = 10.0  # longer than a batch exporter's 5 s delay, so one trace is usually one write
    max_spans: int = 100_000  # spans held in memory (written ones are forgotten first)
    max_body: int = 32 * 1024 * 1024  # bytes of one request body, before and after decompression
    retry_after_s: int = 2  # told to an exporter refused for room; the writer writes meanwhile


@dataclass
class Accepted:
    kept: int
    rejected: list[str]  # one sentence per span left out
    full: bool  # refused whole for room (503)


class Receiver:
    """Spans of corpus ``corpus`` held and written to the store at ``root``.

    ``start`` runs the writer thread; ``close`` stops it and writes every held span (the server
    calls both from its lifespan, so SIGTERM or Ctrl-C write before the process exits).
    """

    def __init__(self, root: Path, corpus: str, settings: Settings = Settings(), origin: str = "OTLP/HTTP",
                 say: Say = print) -> None:
        check_corpus_name(Path(root), corpus, "receive")  # one sentence (AtlasError) before any port opens
        self.root = Path(root)
        self.corpus = corpus
        self.settings = settings
        self.origin = origin
        self.say = say
        self.held = Held(settings.max_spans)
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

    def accept(self, decoded: Decoded) -> Accepted:
        added = self.held.add(decoded.spans)
        if added.full:
            self._wake.set()
            return Accepted(0, [], True)
        rejected = [p.message for p in decoded.rejected + added.rejected]  # the request is named once, by the caller
        if self.held.pressed():
            self._wake.set()
        return Accepted(added.accepted, rejected, False)

    # -- writing ---------------------------------------------------------------------------

    def start(self) -> None:
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
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                self.say(f"could not write {len(due)} trace(s) to corpus {self.corpus} ({reason}); "
                         f"they are held and tried again in {self.settings.idle_s:g} s.")
                self._retry_at = time.monotonic() + self.settings.idle_s
                return None
            self.held.written(due, written.run_ids)
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
