"""The judges' reply cache: every reply an endpoint gave, kept in the store, so a re-run, an
extended slice or a resumed run pays only for calls it has not made.

Where: ``STORE/judge-cache/replies.sqlite`` (beside the store's sources; the store's recovery
never touches it, and no reader of the store reads it). Why SQLite and not a store source: a
reply must be safe the moment it arrives (a judge killed after 900 of 1,000 calls resumes at
900), one reply at a time, from a process that may die at any instant. A store source is
written whole and atomically, which suits the prediction set (written once at the end) but
would rewrite the source per reply. SQLite commits each reply as one transaction in its
write-ahead log: after ``kill -9`` the next open rolls back a half-written transaction, so no
half row is ever read, and every committed reply is there.

Key: sha256 of the model name, the template's sha256, the messages sent and the sampling
parameters (temperature, max tokens). Not the base URL: the same model behind another address
(a mirror, a port change) answers the same prompt. Not whether JSON mode was on: the contract is
the same either way. What is never kept: the API key, headers, the base URL's credentials.

Only replies are kept (content, even empty: a model that answers nothing answers nothing
again); a call that failed after its retries is not, so a re-run tries it again.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import AtlasError

CACHE_DIR = "judge-cache"
CACHE_FILE = "replies.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    template_sha TEXT NOT NULL,
    content TEXT,
    finish_reason TEXT,
    tokens_in INTEGER,
    tokens_out INTEGER,
    latency_s REAL NOT NULL,
    retries INTEGER NOT NULL,
    json_mode INTEGER NOT NULL,
    created_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class Cached:
    content: str | None
    finish_reason: str | None
    tokens_in: int | None
    tokens_out: int | None
    latency_s: float
    retries: int
    json_mode: bool


def reply_key(model: str, template_sha: str, messages: Sequence[Mapping[str, str]],
              parameters: Mapping[str, object]) -> str:
    blob = json.dumps({"model": model, "template": template_sha, "messages": list(messages),
                       "parameters": dict(parameters)}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def cache_path(root: str | Path) -> Path:
    return Path(root) / CACHE_DIR / CACHE_FILE


class ReplyCache:
    """One connection to the cache, used by one thread at a time (the judge's event loop)."""

    def __init__(self, root: str | Path) -> None:
        self.path = cache_path(root)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # One thread at a time uses it (the judge's loop may run on a thread of its own).
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed reply survives the process's death (kill -9); only
            # a power cut may lose the last few, never leaving a half row.
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(SCHEMA)
            self.db.execute("SELECT count(*) FROM replies LIMIT 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise AtlasError(f"{self.path} is not a judges' reply cache ({exc}); move it away and run again "
                             "(the replies it held will be asked for again).") from None

    def get(self, key: str) -> Cached | None:
        row = self.db.execute(
            "SELECT content, finish_reason, tokens_in, tokens_out, latency_s, retries, json_mode "
            "FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return Cached(row[0], row[1], row[2], row[3], float(row[4]), int(row[5]), bool(row[6]))

    def put(self, key: str, model: str, template_sha: str, reply: Cached) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO replies (key, model, template_sha, content, finish_reason, tokens_in, tokens_out, "
            "latency_s, retries, json_mode, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, model, template_sha, reply.content, reply.finish_reason, reply.tokens_in, reply.tokens_out,
             reply.latency_s, reply.retries, int(reply.json_mode), time.time()))

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        self.db.close()
