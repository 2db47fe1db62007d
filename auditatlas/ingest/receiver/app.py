"""The ASGI app: ``POST /v1/traces`` on Starlette, answered as OTLP/HTTP says (see :mod:`.bodies`)."""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..otlp_spans import decode_body
from .bodies import (
    MEDIA_TYPES,
    RETRYABLE,
    Refused,
    content_coding,
    encoding_of,
    export_response,
    inflate,
    rejected_message,
    status_response,
)
from .service import Budget, Receiver

TRACES_PATH = "/v1/traces"


def make_app(receiver: Receiver) -> Starlette:
    """The app serving ``receiver``; its lifespan starts the writer and, on shutdown, writes
    every held span before the server exits."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        receiver.start()
        try:
            yield
        finally:
            await run_in_threadpool(receiver.close)

    async def export(request: Request) -> Response:
        client = f"{request.client.host}:{request.client.port}" if request.client else "an unknown client"
        name = receiver.request_name(client)
        encoding = encoding_of(request.headers.get("content-type"))
        settings = receiver.settings
        reading = Reading(receiver.decoding, name)
        try:
            if encoding is None:
                given = (request.headers.get("content-type") or "none").split(";")[0].strip()[:60]
                raise Refused(415, f"content type '{given}' is not OTLP; send application/x-protobuf or "
                                   "application/json.")
            coding = content_coding(request.headers.get("content-encoding"))
            body = await _body(request, settings.max_body, reading)
            raw = inflate(body, coding, settings.max_body)
            reading.take(len(raw) - len(body))  # the inflated bytes, beside the body kept for the journal
            decoded = await run_in_threadpool(decode_body, raw, encoding, name)
            del raw
            if decoded.refused:
                raise Refused(400, " ".join(p.message for p in decoded.refused))
            accepted = await run_in_threadpool(receiver.accept, decoded, body, encoding, coding)
            if accepted.too_many:
                raise Refused(413, f"holds {accepted.too_many:,} new spans, more than the receiver holds at once "
                                   f"({settings.max_spans:,}, --max-spans): the request alone exceeds the cap, so "
                                   "sending it again cannot help; send smaller batches (the exporter's batch size) "
                                   "or raise --max-spans.")
            if accepted.full:
                raise Refused(503, f"the receiver holds {receiver.held.unwritten:,} spans not yet written, its limit "
                                   "(--max-spans); it is writing them now, send again shortly.")
            if accepted.failed:
                raise Refused(503, f"{accepted.failed}; nothing of it was kept, send again shortly.")
        except Refused as refused:
            sentence = f"{name}: {refused.sentence}"
            receiver.say(f"{'refused' if refused.status == 503 else 'rejected'} ({refused.status}) {sentence}")
            retry = {"Retry-After": str(settings.retry_after_s)} if refused.status in RETRYABLE else None
            return _failure(encoding or "protobuf", refused.status, sentence, retry)
        finally:
            reading.give_back()
        if accepted.rejected:
            receiver.say(f"partly rejected {name}: kept {accepted.kept} span(s); {rejected_message(accepted.rejected)}")
        return Response(export_response(encoding, name, accepted.rejected), 200, media_type=MEDIA_TYPES[encoding])

    return Starlette(routes=[Route(TRACES_PATH, export, methods=["POST"])], lifespan=lifespan)


class Reading:
    """The bytes one request takes of the receiver's decoding budget, given back when it is answered."""

    def __init__(self, budget: Budget, name: str) -> None:
        self.budget, self.name, self.taken = budget, name, 0

    def take(self, n: int) -> None:
        if n <= 0:
            return
        if not self.budget.take(n):
            raise Refused(503, f"the receiver is reading and decoding {self.budget.taken:,} bytes of other "
                               f"requests, its limit of {self.budget.capacity:,} (--max-decoding-mb); send again "
                               "shortly.")
        self.taken += n

    def give_back(self) -> None:
        self.budget.give(self.taken)
        self.taken = 0


async def _body(request: Request, limit: int, reading: Reading) -> bytes:
    """The request body, refused (413) as soon as it is known to be over ``limit`` bytes, and
    (503) when the receiver's decoding budget has no room for it."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"is {int(declared):,} bytes, over the receiver's limit of {limit:,} (--max-body-mb): "
                           "the request alone exceeds the cap; send smaller batches.")
    if declared and declared.isdigit():
        reading.take(int(declared))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"is over the receiver's limit of {limit:,} bytes (--max-body-mb): the request alone "
                               "exceeds the cap; send smaller batches.")
        if size > reading.taken:
            reading.take(size - reading.taken)
        chunks.append(chunk)
    return b"".join(chunks)


def _failure(encoding: str, status: int, sentence: str, headers: dict[str, str] | None = None) -> Response:
    return Response(status_response(encoding, status, sentence), status, headers=headers,
                    media_type=MEDIA_TYPES[encoding])
