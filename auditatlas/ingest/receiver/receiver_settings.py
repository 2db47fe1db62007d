"""The receiver's settings (its bounds and how long a trace waits), apart from its service so the
command line's parser reads their defaults without loading the service (the OTLP reading and the
store's writer, with pyarrow)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import AtlasError


@dataclass(frozen=True)
class Settings:
    idle_s: float = 10.0  # longer than a batch exporter's 5 s delay, so one trace is usually one write
    max_spans: int = 100_000  # spans held in memory (written ones are forgotten first)
    max_body: int = 32 * 1024 * 1024  # bytes of one request body, before and after decompression
    # Bytes of request bodies read, inflated and decoded at once (decoding holds about 40 times
    # a body's inflated bytes in Python objects): past it a request is answered 503.
    max_decoding: int = 32 * 1024 * 1024
    retry_after_s: int = 2  # told to an exporter refused for room; the writer writes meanwhile
    journal: bool = True  # False only for the benchmark's reference: a 200 is then not durable

    def __post_init__(self) -> None:
        if self.max_decoding < self.max_body:
            raise AtlasError(f"--max-decoding-mb ({self.max_decoding // 2**20}) is below --max-body-mb "
                             f"({self.max_body // 2**20}): a request of the largest size could never be read.")
