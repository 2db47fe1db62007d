"""The receiver's write-ahead journal: a request is answered only once its body is on disk.

An OTLP exporter that got a 200 never sends those spans again, so a 200 must mean the spans
survive ``kill -9`` and a power cut. Spans wait in memory until their trace has been idle
(:mod:`.held`), so each accepted request's body is first committed here, and the answer waits
for that commit.

Where: ``STORE/receiver/<corpus>.journal``, one per receiver (a corpus has one receiver at a
time: ``<corpus>.journal.lock`` is flock-ed while it runs, and a second one is refused with one
sentence). A record is one request as it arrived: its sequence number, encoding, content
encoding and body bytes (compressed if it was). Decoding it again gives the same spans.

Why SQLite (the standard library's ``sqlite3``) and not a hand-made append-only file: each
commit is appended to its write-ahead log and fsync-ed (``journal_mode=WAL``,
``synchronous=FULL``), a torn last record after a kill is rolled back by SQLite itself
(checksummed WAL frames), and a record can be deleted alone once the store holds its spans,
which a prefix-truncated file cannot do when traces are written out of arrival order. What a
hand-made file would need (framing, checksums, torn-tail recovery, compaction) is what SQLite
has been tested on for twenty years.

Group commit: requests answered at once share one transaction, so one fsync acknowledges them
all. A request thread queues its record; whichever waiting thread finds no commit running
becomes the leader, commits everything queued in one transaction and wakes the others
(``fsync`` releases the GIL, so the queue fills while it runs).

A record is deleted once every span it brought is in the store (``forget``, called after the
store's commit); at start the receiver replays what is left (``records``), dropping what the
store holds already, so a kill at any moment neither loses nor repeats a span.
"""
from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import AtlasError

JOURNAL_DIR = "receiver"


class JournalError(AtlasError):
    """A record could not be committed (the disk is full, the folder read-only...)."""


@dataclass(frozen=True)
class Record:
    seq: int
    encoding: str  # "protobuf" | "json"
    content_encoding: str  # "identity" | "gzip" | "deflate"
    body: bytes


def journal_path(root: Path, corpus: str) -> Path:
    return Path(root) / JOURNAL_DIR / f"{corpus}.journal"


class Journal:
    """The journal of corpus ``corpus`` in store ``root``; one process at a time."""

    def __init__(self, root: Path, corpus: str) -> None:
        self.path = journal_path(root, corpus)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AtlasError(f"the receiver's journal folder {self.path.parent} cannot be made "
                             f"({exc.strerror or exc}); point --store at a folder you can write.") from None
        self._lock_fd = self._take_lock(corpus)
        try:
            existed = self.path.exists()
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")  # no shared-memory index: one process uses it
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # every commit fsync-ed
            self._db.execute("PRAGMA journal_size_limit=67108864")  # the WAL file shrinks back after a burst
            self._db.execute("CREATE TABLE IF NOT EXISTS records (seq INTEGER PRIMARY KEY, encoding TEXT NOT NULL, "
                             "content_encoding TEXT NOT NULL, body BLOB NOT NULL)")
            if not existed:
                _fsync_dir(self.path.parent)  # the new file's name is durable too
            last = self._db.execute("SELECT max(seq) FROM records").fetchone()[0]
        except sqlite3.Error as exc:
            os.close(self._lock_fd)
            raise AtlasError(f"the receiver's journal {self.path} cannot be opened ({exc}); move it aside to start "
                             "without it (its spans would be lost).") from None
        self._db_lock = threading.Lock()
        self._cond = threading.Condition()
        self._next = (last or 0) + 1
        self._reserved: set[int] = set()  # numbers given out, their record not queued yet
        self._queue: list[Record] = []
        self._pending: set[int] = set()  # queued or being committed
        self._failed: dict[int, str] = {}
        self._committing = False
        self._deferred: list[int] = []  # released while still reserved or pending
        self.commits = 0  # transactions (fsyncs) so far, for the benchmark
        self.committed = 0  # records committed so far

    def _take_lock(self, corpus: str) -> int:
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise AtlasError(f"corpus '{corpus}' is being received already (by {holder}); one receiver per corpus "
                             "(stop it, or receive into another --corpus).") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()}".encode(), 0)
        return fd

    # -- reading (at start) -----------------------------------------------------------------

    def records(self) -> Iterator[Record]:
        """Every record the journal holds, oldest first, one at a time."""
        with self._db_lock:
            seqs = [s for (s,) in self._db.execute("SELECT seq FROM records ORDER BY seq")]
        for seq in seqs:
            with self._db_lock:
                row = self._db.execute("SELECT encoding, content_encoding, body FROM records WHERE seq = ?",
                                       (seq,)).fetchone()
            if row is not None:
                yield Record(seq, row[0], row[1], bytes(row[2]))

    def count(self) -> int:
        """The records it holds."""
        with self._db_lock:
            return self._db.execute("SELECT count(*) FROM records").fetchone()[0]

    # -- writing ----------------------------------------------------------------------------

    def reserve(self) -> int:
        """The next record's sequence number; then ``enqueue`` or ``abandon`` it."""
        with self._cond:
            seq, self._next = self._next, self._next + 1
            self._reserved.add(seq)
            return seq

    def abandon(self, seq: int) -> None:
        """A reserved number whose request brought nothing to keep (a gap is harmless)."""
        with self._cond:
            self._reserved.discard(seq)

    def enqueue(self, seq: int, encoding: str, content_encoding: str, body: bytes) -> None:
        """Queue record ``seq`` for the next commit; ``wait(seq)`` returns once it is on disk."""
        with self._cond:
            self._reserved.discard(seq)
            self._queue.append(Record(seq, encoding, content_encoding, body))
            self._pending.add(seq)

    def wait(self, seq: int) -> None:
        """Return once record ``seq`` is committed and fsync-ed; raise JournalError if it failed."""
        with self._cond:
            self._lead_until(lambda: seq not in self._pending)
            if seq in self._failed:
                raise JournalError(self._failed.pop(seq))

    def sync(self) -> None:
        """Return once every record queued so far is committed (for a request whose spans an
        earlier record, perhaps still being committed, brought first)."""
        with self._cond:
            waiting = set(self._pending)
            self._lead_until(lambda: not (waiting & self._pending))

    def _lead_until(self, done) -> None:
        """Wait (holding self._cond) until ``done()``; commit the queue whenever no one else is."""
        while not done():
            if self._committing or not self._queue:
                self._cond.wait()
                continue
            batch, self._queue = sorted(self._queue, key=lambda r: r.seq), []
            self._committing = True
            self._cond.release()
            error = None
            try:
                self._insert(batch)
            except (sqlite3.Error, OSError) as exc:
                error = f"the receiver's journal {self.path} could not be written ({exc})"
            finally:
                self._cond.acquire()
                self._committing = False
                self._pending.difference_update(r.seq for r in batch)
                if error is not None:
                    self._failed.update({r.seq: error for r in batch})
                self._cond.notify_all()
            ready = self._ready_deferred()
            if ready:
                self._cond.release()
                try:
                    self._delete(ready)
                finally:
                    self._cond.acquire()

    def _insert(self, batch: list[Record]) -> None:
        if not batch:
            return
        with self._db_lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR REPLACE INTO records (seq, encoding, content_encoding, body) "
                                     "VALUES (?, ?, ?, ?)",
                                     [(r.seq, r.encoding, r.content_encoding, r.body) for r in batch])
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self.commits += 1
            self.committed += len(batch)

    # -- truncating -------------------------------------------------------------------------

    def forget(self, seqs: Iterable[int]) -> None:
        """Delete records whose spans the store now holds (call after the store's commit)."""
        with self._cond:
            self._deferred.extend(seqs)
            ready = self._ready_deferred()
        self._delete(ready)

    def _ready_deferred(self) -> list[int]:
        # A record released before its own commit finished is deleted after it (else the late
        # insert would bring it back). Called holding self._cond.
        ready = [s for s in self._deferred if s not in self._reserved and s not in self._pending]
        if ready:
            gone = set(ready)
            self._deferred = [s for s in self._deferred if s not in gone]
        return ready

    def _delete(self, seqs: list[int]) -> None:
        if not seqs:
            return
        with self._db_lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("DELETE FROM records WHERE seq = ?", [(s,) for s in seqs])
                self._db.execute("COMMIT")
            except sqlite3.Error:
                # Left in the journal: replayed at the next start, where the store's spans are dropped.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")

    def close(self) -> None:
        with self._db_lock:
            try:
                if not self._db.execute("SELECT count(*) FROM records").fetchone()[0]:
                    self._db.execute("VACUUM")  # an empty journal gives its pages back
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
            self._db.close()
        os.close(self._lock_fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
