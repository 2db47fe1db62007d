"""OTLP/HTTP request and response bodies: content types, compression, the answer messages.

What the OTLP/HTTP specification asks of a server, and where it is done here:

- bodies are ``application/x-protobuf`` or ``application/json`` (an ``ExportTraceServiceRequest``);
  any other type is answered 415 Unsupported Media Type;
- ``Content-Encoding: gzip`` (and ``deflate``) are accepted; another encoding is 415 too, which
  is what HTTP says of a payload "in a format not supported" (RFC 9110, 15.5.16);
- success is 200 with an ``ExportTraceServiceResponse`` in the request's encoding, its
  ``partial_success`` (``rejected_spans``, ``error_message``) set when some spans were left out;
- a failure carries a ``google.rpc.Status`` message (in the request's encoding) whose message
  says why: 400 for a body that does not parse (not to be retried), 413 for a request that alone
  exceeds a cap (bytes, inflated bytes, spans: sending it again cannot help), 503 with
  ``Retry-After`` when the receiver has no room now (spans held, bytes being decoded) or could
  not journal the request (exporters retry 429/502/503/504).
"""
from __future__ import annotations

import json
import zlib

CONTENT_TYPES = {"application/x-protobuf": "protobuf", "application/json": "json"}
ENCODINGS = ("gzip", "deflate", "identity")
MEDIA_TYPES = {"protobuf": "application/x-protobuf", "json": "application/json"}
# google.rpc.Code of each HTTP failure (the Status message carries both).
_RPC_CODES = {400: 3, 413: 3, 415: 3, 503: 14}  # INVALID_ARGUMENT, UNAVAILABLE
RETRYABLE = (429, 502, 503, 504)  # what OTLP exporters send again (after Retry-After)
_SHOWN = 10  # rejected spans named in error_message before "and N more"


class Refused(Exception):
    """A request answered with a failure: the HTTP status and one sentence."""

    def __init__(self, status: int, sentence: str) -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence


def encoding_of(content_type: str | None) -> str | None:
    """"protobuf" or "json" for an OTLP content type (parameters such as charset ignored)."""
    return CONTENT_TYPES.get((content_type or "").split(";")[0].strip().lower())


def content_coding(content_encoding: str | None) -> str:
    """"identity", "gzip" or "deflate"; another encoding is refused (415)."""
    coding = (content_encoding or "identity").strip().lower() or "identity"
    if coding not in ENCODINGS:
        raise Refused(415, f"content encoding '{coding[:40]}' is not supported; send gzip, deflate or none.")
    return coding


def inflate(body: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body decompressed, never past ``limit`` bytes (a small gzip body may inflate to
    gigabytes: zlib stops at the limit); raises :class:`Refused` (400 for broken data, 413 past
    the limit)."""
    coding = content_coding(content_encoding)
    if coding == "identity":
        return body
    # deflate is zlib-wrapped by the HTTP standard; some clients send the raw stream, tried next.
    attempts = [16 + zlib.MAX_WBITS] if coding == "gzip" else [zlib.MAX_WBITS, -zlib.MAX_WBITS]
    for wbits in attempts:
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error:
            continue
        if len(out) > limit:
            raise Refused(413, f"inflates to more than {limit:,} bytes, the receiver's limit (--max-body-mb): the "
                               "request alone exceeds the cap; send smaller batches.")
        if not inflater.eof:
            break
        return out
    raise Refused(400, f"is not complete {coding} data (Content-Encoding: {coding}).")


def export_response(encoding: str, name: str, rejected: list[str]) -> bytes:
    """An ``ExportTraceServiceResponse``; ``partial_success`` names the rejected spans, if any."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = len(rejected)
        response.partial_success.error_message = f"{name}: {rejected_message(rejected)}"
    return _encoded(response, encoding)


def rejected_message(rejected: list[str]) -> str:
    more = f" (and {len(rejected) - _SHOWN} more)" if len(rejected) > _SHOWN else ""
    return f"{len(rejected)} span(s) rejected: " + " ".join(rejected[:_SHOWN]) + more


def status_response(encoding: str, status: int, sentence: str) -> bytes:
    """A ``google.rpc.Status`` saying why the request failed."""
    from google.rpc.status_pb2 import Status

    return _encoded(Status(code=_RPC_CODES.get(status, 2), message=sentence), encoding)


def _encoded(message, encoding: str) -> bytes:
    if encoding == "json":
        from google.protobuf.json_format import MessageToDict

        return json.dumps(MessageToDict(message), ensure_ascii=False).encode("utf-8")
    return message.SerializeToString()
