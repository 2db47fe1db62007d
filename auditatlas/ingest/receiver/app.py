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
from .bodies import MEDIA_TYPES, Refused, encoding_of, export_response, inflate, rejected_message, status_response
from .service import Receiver

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
        try:
            if encoding is None:
                given = (request.headers.get("content-type") or "none").split(";")[0].strip()[:60]
                raise Refused(415, f"content type '{given}' is not OTLP; send application/x-protobuf or "
                                   "application/json.")
            body = await _body(request, receiver.settings.max_body)
            raw = inflate(body, request.headers.get("content-encoding"), receiver.settings.max_body)
            decoded = await run_in_threadpool(decode_body, raw, encoding, name)
            if decoded.refused:
                raise Refused(400, " ".join(p.message for p in decoded.refused))
        except Refused as refused:
            sentence = f"{name}: {refused.sentence}"
            receiver.say(f"rejected ({refused.status}) {sentence}")
            return _failure(encoding or "protobuf", refused.status, sentence)
        accepted = receiver.accept(decoded)
        if accepted.full:
            sentence = (f"{name}: the receiver holds {receiver.held.unwritten:,} spans not yet written, its limit "
                        "(--max-spans); it is writing them now, send again shortly.")
            receiver.say(f"refused (503) {sentence}")
            return _failure(encoding, 503, sentence, {"Retry-After": str(receiver.settings.retry_after_s)})
        if accepted.rejected:
            receiver.say(f"partly rejected {name}: kept {accepted.kept} span(s); {rejected_message(accepted.rejected)}")
        return Response(export_response(encoding, name, accepted.rejected), 200, media_type=MEDIA_TYPES[encoding])

    return Starlette(routes=[Route(TRACES_PATH, export, methods=["POST"])], lifespan=lifespan)


async def _body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) as soon as it is known to be over ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"is {int(declared):,} bytes, over the receiver's limit of {limit:,} (--max-body-mb).")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"is over the receiver's limit of {limit:,} bytes (--max-body-mb).")
        chunks.append(chunk)
    return b"".join(chunks)


def _failure(encoding: str, status: int, sentence: str, headers: dict[str, str] | None = None) -> Response:
    return Response(status_response(encoding, status, sentence), status, headers=headers,
                    media_type=MEDIA_TYPES[encoding])
