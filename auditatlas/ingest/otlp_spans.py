"""OTLP trace files read into spans: JSON, JSONL, protobuf, gzip, a file or a folder.

What is read:

- OTLP/JSON: one ``ExportTraceServiceRequest`` document per file, a JSON list of them, or JSONL
  with one per line (what the OpenTelemetry Collector's file exporter writes); any file name
  ending ``.json``, ``.jsonl`` or ``.ndjson``;
- OTLP protobuf: one serialized ``ExportTraceServiceRequest`` per ``.pb`` / ``.binpb`` file,
  parsed with ``opentelemetry-proto`` and turned into the OTLP/JSON form by protobuf's own JSON
  printer (base64 ids, enum names, int64 as strings), so both encodings meet one normalizer;
- either one gzip-compressed (``.gz`` suffix, or the gzip magic bytes), inflated in a stream and
  refused past ``kit.compressed.MAX_INFLATED_BYTES``.

The normalizing of one span (hex or base64 ids, integer or named span kinds and status codes,
int64 as strings or numbers, every ``AnyValue`` form, camelCase or snake_case keys, the legacy
``instrumentationLibrarySpans``) is agentpile's OTLP reader's (``agentpile.formats.otlp``). What
this module adds is what a store import needs and agentpile leaves to its caller: one sentence per
problem naming the file and span (not OTLP, invalid UTF-8, no trace or span id, an oversized
attribute), protobuf and gzip input, and whole folders.

The live receiver (:mod:`auditatlas.ingest.receiver`) decodes request bodies with
:func:`decode_body`: the same documents, the same spans and the same sentences, told apart into
problems of the whole body (HTTP 400) and of single spans (rejected in ``partial_success``).
"""
from __future__ import annotations

import gzip
import json
import os
import re
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentpile.formats import otlp as ap_otlp

from ..errors import InputError
from .kit import decode_text, parse_documents, read_raw
from .kit.compressed import read_maybe_gzip

JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
PROTO_SUFFIXES = (".pb", ".binpb")
SUFFIXES = JSON_SUFFIXES + PROTO_SUFFIXES
# One attribute value larger than this is refused: a step's text is shown whole on the Explorer,
# and a value this size is a payload the instrumentation should have cut (the SDKs' own
# OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT does exactly that).
MAX_ATTRIBUTE_BYTES = 4 * 1024 * 1024
_HEX_TRACE = re.compile(r"^[0-9a-f]{32}$")
_HEX_SPAN = re.compile(r"^[0-9a-f]{16}$")


@dataclass
class Span:
    """One span as imported: the normalized entry plus where it came from."""

    file: str  # relative to the ingested path
    where: str  # position inside the file ("line 3", "resourceSpans[0]...")
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str  # OTel span kind: INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER, UNSPECIFIED
    start_ns: int | None
    end_ns: int | None
    status: str  # UNSET | OK | ERROR
    status_message: str | None
    attrs: dict[str, Any]
    resource: dict[str, Any]
    scope: dict[str, Any]
    events: list[dict] = field(default_factory=list)
    links: list[dict] = field(default_factory=list)
    order: int = 0  # position in the whole input, the last tie-breaker of step order
    missing_parent: str | None = None  # the parent it named that never arrived (it is read as a root)

    def same_as(self, other: Span) -> bool:
        """The same span sent twice (an exporter's retry): equal in all but where it was read."""
        return all(getattr(self, f) == getattr(other, f) for f in self.__dataclass_fields__
                   if f not in ("file", "where", "order"))

    def label(self) -> str:
        """The span as a sentence names it."""
        return f"span {self.span_id} ('{self.name}')" if self.name else f"span {self.span_id}"


def otlp_files(path: Path) -> list[Path]:
    """``path`` itself, or every OTLP-looking file below it (hidden ones skipped), sorted."""
    if path.is_file():
        return [path]
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and _base_suffix(name) in SUFFIXES:
                found.append(Path(dirpath) / name)
    return found


def _base_suffix(name: str) -> str:
    """The suffix that says the encoding, a ``.gz`` after it set aside."""
    stem = name[:-3] if name.endswith(".gz") else name
    return os.path.splitext(stem)[1].lower()


def looks_like_otlp(path: Path) -> bool:
    """A cheap look at the first file: a protobuf file by name, or JSON holding ``resourceSpans``."""
    files = otlp_files(Path(path))
    if not files:
        return False
    file = files[0]
    if _base_suffix(file.name) in PROTO_SUFFIXES:
        return True
    try:
        raw = read_maybe_gzip(file, head=65536).decode("utf-8", errors="ignore")
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile):
        return False
    return '"resourceSpans"' in raw or '"resource_spans"' in raw


def read_spans(path: Path, problems: list[InputError]) -> list[Span]:
    """Every span of every file under ``path``; each problem appended as one sentence."""
    path = Path(path)
    files = otlp_files(path)
    if not files:
        problems.append(InputError(path, None, f"holds no OTLP file (names ending {', '.join(SUFFIXES)}, "
                                               "optionally .gz)."))
    return read_files(path, files, problems)


def read_files(path: Path, files: list[Path], problems: list[InputError]) -> list[Span]:
    """The spans of ``files`` (found under ``path`` by :func:`otlp_files`), named relative to ``path``."""
    spans: list[Span] = []
    for file in files:
        for doc, where in _documents(file, _rel(path, file), problems):
            _spans_of(doc, _rel(path, file), where, spans, problems)
    return spans


def _rel(path: Path, file: Path) -> str:
    return file.name if path.is_file() else file.relative_to(path).as_posix()


def trace_ids(file: Path) -> tuple[set[str], int] | None:
    """The trace ids a file's spans name and its number of spans, read cheaply (no span is normalized), or None when the
    file does not read as OTLP (its problems are found when it is read in full).

    What lets a file ingest write a folder in batches: files that share no trace can be mapped
    apart. Ids come out as the normalizer gives them (hex; base64 converted)."""
    ignored: list[InputError] = []
    try:
        if _base_suffix(file.name) in PROTO_SUFFIXES:
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

            message = ExportTraceServiceRequest.FromString(read_maybe_gzip(file))
            spans = [sp for rs in message.resource_spans for ss in rs.scope_spans for sp in ss.spans]
            return {sp.trace_id.hex() for sp in spans}, len(spans)
        docs = _json_documents(read_maybe_gzip(file), file.name, _base_suffix(file.name) in (".jsonl", ".ndjson"), ignored)
    except Exception:  # noqa: BLE001 - any failure here is reported by the full read
        return None
    found: set[str] = set()
    n = 0
    for doc, _ in docs:
        if not _is_export(doc):
            return None
        for rs in doc.get("resourceSpans", doc.get("resource_spans")) or []:
            blocks = (rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans")
                      or rs.get("instrumentation_library_spans") or []) if isinstance(rs, dict) else []
            for ss in blocks:
                for sp in (ss.get("spans") or []) if isinstance(ss, dict) else []:
                    if isinstance(sp, dict):
                        n += 1
                        found.add(str(ap_otlp._hex_id(sp.get("traceId", sp.get("trace_id")), 16)))  # noqa: SLF001
    return None if ignored else (found, n)


@dataclass
class Decoded:
    """One request body read: its spans, what refuses the whole body, what rejected single spans."""

    spans: list[Span]
    refused: list[InputError]  # the body is not an OTLP export (answered 400)
    rejected: list[InputError]  # one sentence per span left out (counted in partial_success)


def decode_body(raw: bytes, encoding: str, name: str) -> Decoded:
    """An ``ExportTraceServiceRequest`` body (``encoding`` "protobuf" or "json", already
    decompressed) read as :func:`read_spans` reads a file; ``name`` stands where a file's name
    would (e.g. "request 7 from 127.0.0.1:50312")."""
    refused: list[InputError] = []
    if not (raw if encoding == "protobuf" else raw.strip()):
        # An empty protobuf body is a valid empty request (every field is optional), so an empty
        # JSON body is answered alike: nothing to keep, nothing wrong.
        return Decoded([], [], [])
    if encoding == "protobuf":
        docs = _protobuf_document(raw, name, refused, named_as="sent as application/x-protobuf; send it as "
                                                                "application/json")
    else:
        docs = _json_documents(raw, name, False, refused)
    spans: list[Span] = []
    rejected: list[InputError] = []
    for doc, where in docs if not refused else []:
        if doc == {}:
            continue  # an ExportTraceServiceRequest with no field set (``{}``, or protobuf of no resourceSpans)
        if not _is_export(doc):
            refused.append(_not_export(name, where))
            continue
        _spans_of(doc, name, where, spans, rejected)
    return Decoded(spans if not refused else [], refused, rejected)


# --------------------------------------------------------------------------- documents


def _documents(file: Path, rel: str, problems: list[InputError]) -> list[tuple[Any, str]]:
    """The file's ExportTraceServiceRequest documents (as OTLP/JSON dicts) with where each is."""
    raw = read_raw(file, rel, problems)
    if raw is None:
        return []
    if not raw.strip():
        problems.append(InputError(rel, None, "is empty: an export with no spans."))
        return []
    if _base_suffix(file.name) in PROTO_SUFFIXES:
        return _protobuf_document(raw, rel, problems)
    return _json_documents(raw, rel, _base_suffix(file.name) in (".jsonl", ".ndjson"), problems)


def _protobuf_document(raw: bytes, rel: str, problems: list[InputError],
                       named_as: str = "named as protobuf; name it .json") -> list[tuple[Any, str]]:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        message = ExportTraceServiceRequest.FromString(raw)
    except DecodeError as exc:
        if raw.lstrip()[:1] in (b"{", b"["):
            problems.append(InputError(rel, None, f"looks like JSON but is {named_as}."))
        elif "UTF-8" in str(exc):
            problems.append(InputError(rel, None, "holds a string field that is not valid UTF-8; OTLP strings must "
                                                  "be UTF-8 (fix the exporter or the file)."))
        else:
            problems.append(InputError(rel, None, "is not OTLP protobuf (an ExportTraceServiceRequest does not parse "
                                                  "from it)."))
        return []
    if not message.resource_spans and raw.lstrip()[:1] in (b"{", b"["):
        problems.append(InputError(rel, None, f"looks like JSON but is {named_as}."))
        return []
    return [(MessageToDict(message), "")]


def _json_documents(raw: bytes, rel: str, jsonl: bool, problems: list[InputError]) -> list[tuple[Any, str]]:
    text = decode_text(raw, rel, problems, "; OTLP/JSON is UTF-8")
    if text is None:
        return []
    if not jsonl:
        whole: list[InputError] = []
        docs = parse_documents(text, rel, whole, lines=False)
        if docs is not None:
            doc = docs[0][0]
            parts = doc if isinstance(doc, list) else [doc]
            return [(d, f"document {i + 1}" if len(parts) > 1 else "") for i, d in enumerate(parts)]
        if not any("is not valid JSON" in p.message for p in whole):
            problems.extend(whole)  # parsed, but too deep or holding a lone surrogate
            return []
        # Maybe JSONL under a .json name: tried line by line below.
    lines = parse_documents(text, rel, problems, lines=True, lead="is not OTLP/JSON: ")
    return [(doc, f"line {n}") for doc, n in lines or []]


# --------------------------------------------------------------------------- spans


def _spans_of(doc: Any, rel: str, where: str, spans: list[Span], problems: list[InputError]) -> None:
    if not _is_export(doc):
        problems.append(_not_export(rel, where))
        return
    # agentpile normalizes every span of the document; what it keeps per span is checked here.
    for span_id, entry in _normalized(doc):
        span = _span(span_id, entry, rel, where, len(spans), problems)
        if span is not None:
            spans.append(span)


def _is_export(doc: Any) -> bool:
    blocks = doc.get("resourceSpans", doc.get("resource_spans")) if isinstance(doc, dict) else None
    return isinstance(blocks, list)


def _not_export(rel: str, where: str) -> InputError:
    at = f"{where}: " if where else ""
    return InputError(rel, None, f"{at}is not OTLP: an ExportTraceServiceRequest is a JSON object with a "
                                 "resourceSpans list.")


def _normalized(doc: dict) -> list[tuple[str | None, dict]]:
    """``(span id, agentpile's normalized entry)`` for every span object of the document."""
    out = []
    for rs in doc.get("resourceSpans", doc.get("resource_spans")) or []:
        if not isinstance(rs, dict):
            continue
        resource = ap_otlp.decode_attributes((rs.get("resource") or {}).get("attributes"))
        blocks = (rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans")
                  or rs.get("instrumentation_library_spans") or [])
        for ss in blocks:
            if not isinstance(ss, dict):
                continue
            sc = ss.get("scope") or ss.get("instrumentationLibrary") or ss.get("instrumentation_library") or {}
            scope = {k: sc[k] for k in ("name", "version") if isinstance(sc, dict) and sc.get(k)}
            for sp in ss.get("spans") or []:
                if isinstance(sp, dict):
                    out.append(ap_otlp._normalize_span(sp, resource, scope, ""))  # noqa: SLF001 - see module doc
    return out


_DAY_NS = 86_400 * 10**9


def _span(span_id: str | None, entry: dict, rel: str, where: str, order: int, problems: list[InputError]) -> Span | None:
    at = f"{where}: " if where else ""
    name = entry.get("name") if isinstance(entry.get("name"), str) else ""
    named = f"span {span_id} ('{name}')" if span_id else f"a span named '{name}'"
    trace_id = entry.get("trace_id")
    if not trace_id or set(trace_id) == {"0"}:
        problems.append(InputError(rel, None, f"{at}{named} has no trace id; every span needs the trace it belongs to."))
        return None
    if not _HEX_TRACE.match(trace_id):
        problems.append(InputError(rel, None, f"{at}{named} has trace id {trace_id[:40]!r}, not 16 bytes in hex or base64."))
        return None
    if not span_id or set(span_id) == {"0"}:
        problems.append(InputError(rel, None, f"{at}a span named '{name}' of trace {trace_id} has no span id."))
        return None
    if not _HEX_SPAN.match(span_id):
        problems.append(InputError(rel, None, f"{at}span id {span_id[:40]!r} of trace {trace_id} is not 8 bytes in "
                                              "hex or base64."))
        return None
    parent = entry.get("parent")
    if parent is not None and (set(parent) == {"0"}):
        parent = None  # an all-zero parent is how some exporters write "no parent"
    if parent is not None and not _HEX_SPAN.match(parent):
        problems.append(InputError(rel, None, f"{at}{named} of trace {trace_id} has parent id {parent[:40]!r}, not 8 "
                                              "bytes in hex or base64."))
        return None
    if parent == span_id:
        problems.append(InputError(rel, None, f"{at}{named} of trace {trace_id} names itself as its parent; a span's "
                                              "parent is another span of its trace."))
        return None
    start = entry.get("start_time_unix_nano")
    if _far_future(start):
        problems.append(InputError(rel, None, f"{at}{named} of trace {trace_id} starts at {_when(start)}, more than a "
                                              "day from now; its exporter's clock or the file's times are wrong."))
        return None
    attrs = entry.get("attributes") or {}
    big = _oversized(attrs)
    if big is not None:
        key, size = big
        problems.append(InputError(rel, None, f"{at}{named} of trace {trace_id} has attribute '{key}' of "
                                              f"{size / 1e6:.1f} MB, over the {MAX_ATTRIBUTE_BYTES // (1024 * 1024)} MB "
                                              "one value may hold; cut it at the source "
                                              "(OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) and export again."))
        return None
    status = entry.get("status") or {}
    return Span(
        file=rel, where=where, trace_id=trace_id, span_id=span_id, parent_id=parent, name=name,
        kind=str(entry.get("kind") or "UNSPECIFIED").removeprefix("SPAN_KIND_"),
        start_ns=entry.get("start_time_unix_nano"), end_ns=entry.get("end_time_unix_nano"),
        status=str(status.get("code") or "UNSET"), status_message=status.get("message"),
        attrs=attrs, resource=entry.get("resource") or {}, scope=entry.get("scope") or {},
        events=entry.get("events") or [], links=entry.get("links") or [], order=order,
    )


def _far_future(ns: Any) -> bool:
    """Whether a span's start (nanoseconds since 1970) is more than a day after now: a span is
    recorded after it starts, and a time in the far future would sort after every later span."""
    try:
        return int(ns) > time.time_ns() + _DAY_NS
    except (TypeError, ValueError):
        return False


def _when(ns: Any) -> str:
    try:
        return datetime.fromtimestamp(int(ns) / 1e9, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, ValueError, OSError):
        return f"{int(ns):,} ns after 1970"


def _oversized(attrs: dict[str, Any]) -> tuple[str, int] | None:
    """The first attribute whose value is over :data:`MAX_ATTRIBUTE_BYTES` (as UTF-8), or None."""
    for key, value in attrs.items():
        if isinstance(value, str):
            # A character is at most 4 bytes: only a long string needs encoding to be sure.
            if len(value) * 4 > MAX_ATTRIBUTE_BYTES and (size := len(value.encode("utf-8", "surrogatepass"))) > MAX_ATTRIBUTE_BYTES:
                return key, size
        elif isinstance(value, (list, dict)):
            size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            if size > MAX_ATTRIBUTE_BYTES:
                return key, size
    return None
