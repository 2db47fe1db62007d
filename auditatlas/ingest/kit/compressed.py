"""Compressed input read in a stream and refused past a size limit.

A gzip file of 2 MB can hold gigabytes (``gzip.decompress`` of a bomb took 73 s and 6.3 GB
before the file was found to hold no spans): the data is inflated a chunk at a time and the
reading stops as soon as it passes the limit, holding at most the limit.
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

GZIP_MAGIC = b"\x1f\x8b"
# Inflated bytes one compressed file may hold: past it the file is refused. The OpenTelemetry
# Collector's file exporter rotates its files at 100 MB; a file is decoded whole in memory.
MAX_INFLATED_BYTES = 512 * 1024 * 1024
_CHUNK = 1024 * 1024


class TooLarge(ValueError):
    """Compressed data that inflates past the limit; the message is the end of a sentence."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"inflates to more than {limit / 2**20:,.0f} MiB, the limit for one compressed file; "
                         "split it into smaller files")
        self.limit = limit


def read_maybe_gzip(path: Path | str | Any, limit: int | None = None, head: int | None = None) -> bytes:
    """The file's bytes, inflated in a stream if it is gzip (by its magic bytes); raises
    :class:`TooLarge` past ``limit`` inflated bytes (``MAX_INFLATED_BYTES`` by default), and
    the gzip module's errors for broken data. ``head``: only the first that many bytes.
    ``path`` may be package data (an ``importlib.resources`` Traversable): anything with ``open``."""
    limit = MAX_INFLATED_BYTES if limit is None else limit
    with (path.open("rb") if hasattr(path, "open") else open(path, "rb")) as raw:
        compressed = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        if not compressed:
            return raw.read(head) if head is not None else raw.read()
        with gzip.GzipFile(fileobj=raw) as inflating:
            out = bytearray()
            want = head if head is not None else limit + 1
            while len(out) < want:
                chunk = inflating.read(min(_CHUNK, want - len(out)))
                if not chunk:
                    break
                out += chunk
            if head is None and len(out) > limit:
                raise TooLarge(limit)
            return bytes(out)

