"""The live receiver run in-process for tests: a uvicorn server in a thread on a free port, and
a plain HTTP client for hand-made bodies."""
from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from auditatlas.ingest.receiver import Settings, bind, server
from auditatlas.ingest.receiver.service import Receiver
from auditatlas.store import table_files


@dataclass
class Running:
    receiver: Receiver
    url: str
    lines: list[str] = field(default_factory=list)

    def wait_writes(self, n: int, timeout: float = 120.0) -> None:
        # An upper bound only (a write takes well under a second here): generous, for a loaded CI machine.
        deadline = time.monotonic() + timeout
        while self.receiver.writes < n:
            assert time.monotonic() < deadline, f"no write {n} within {timeout} s; lines: {self.lines}"
            time.sleep(0.02)


@contextlib.contextmanager
def running(store: Path, corpus: str = "live", **settings) -> Iterator[Running]:
    """A receiver serving until the block ends; leaving it shuts the server down (which writes
    every held span, as SIGTERM does)."""
    lines: list[str] = []
    receiver = Receiver(store, corpus, Settings(**{"idle_s": 0.2, **settings}), say=lines.append)
    sock = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/traces"
    srv = server(receiver)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the receiver did not start"
        time.sleep(0.01)
    try:
        yield Running(receiver, url, lines)
    finally:
        srv.should_exit = True
        thread.join(20)
        sock.close()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


def post(url: str, body: bytes, content_type: str | None = "application/json", encoding: str | None = None,
         headers: dict[str, str] | None = None) -> Answer:
    """POST ``body`` (compressed here when ``encoding`` is gzip or deflate)."""
    if encoding == "gzip":
        body = gzip.compress(body)
    elif encoding == "deflate":
        body = zlib.compress(body)
    sent = {**({"Content-Type": content_type} if content_type else {}),
            **({"Content-Encoding": encoding} if encoding else {}), **(headers or {})}
    request = urllib.request.Request(url, data=body, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
    except urllib.error.HTTPError as exc:
        return Answer(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())


def rows(store: Path, table: str, corpus: str) -> list[dict]:
    """The table's rows of ``corpus`` in run order, without what names the file or request read
    (``runs.source_file``, ``steps.extra.file``): the rest must not depend on how spans came."""
    files = table_files(store, table)
    con = duckdb.connect()
    try:
        cursor = con.execute("SELECT * FROM read_parquet($1) WHERE corpus = $2", [files, corpus])
        names = [d[0] for d in cursor.description]
        out = [dict(zip(names, r)) for r in cursor.fetchall()]
    finally:
        con.close()
    for row in out:
        row.pop("source_file", None)
        if table == "steps":
            extra = json.loads(row["extra"])
            extra.pop("file", None)
            row["extra"] = extra
    keys = {"runs": ("run_id",), "steps": ("run_id", "step_idx"), "edges": ("run_id", "dst_idx", "src_idx")}[table]
    return sorted(out, key=lambda r: tuple(r[k] for k in keys))
