"""OTLP trace files built in the tests: one span description written as OTLP/JSON (hex ids,
integer enums, int64 as strings) and as OTLP protobuf (opentelemetry-proto messages), so the
two encodings can be compared row for row."""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736"
SECOND = 1_000_000_000
T0 = 1_700_000_000 * SECOND


@dataclass
class S:
    """One span: ids in hex, times in seconds after T0."""

    trace: str
    span: str
    name: str
    start: float
    end: float
    parent: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    kind: int = 1  # INTERNAL
    status: int = 0  # UNSET
    message: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, dict]] = field(default_factory=list)


def sid(n: int) -> str:
    return f"{n:016x}"


# --------------------------------------------------------------------------- JSON


def json_value(value: Any) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes):
        import base64

        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return {"arrayValue": {"values": [json_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": json_value(v)} for k, v in value.items()]}}
    return {"stringValue": value}


def json_attrs(attrs: dict) -> list[dict]:
    return [{"key": k, "value": json_value(v)} for k, v in attrs.items()]


def json_span(s: S) -> dict:
    out = {
        "traceId": s.trace, "spanId": s.span, "name": s.name, "kind": s.kind,
        "startTimeUnixNano": str(T0 + int(s.start * SECOND)), "endTimeUnixNano": str(T0 + int(s.end * SECOND)),
        "attributes": json_attrs(s.attrs), "status": {"code": s.status, **({"message": s.message} if s.message else {})},
    }
    if s.parent:
        out["parentSpanId"] = s.parent
    if s.links:
        out["links"] = [{"traceId": t, "spanId": p} for t, p in s.links]
    if s.events:
        out["events"] = [{"name": n, "timeUnixNano": str(T0), "attributes": json_attrs(a)} for n, a in s.events]
    return out


def json_doc(spans: list[S], service: str = "my-agents", scope: str = "tests") -> dict:
    return {"resourceSpans": [{
        "resource": {"attributes": json_attrs({"service.name": service})},
        "scopeSpans": [{"scope": {"name": scope, "version": "1.0"}, "spans": [json_span(s) for s in spans]}],
    }]}


def write_json(path: Path, spans: list[S], **kw: Any) -> Path:
    path.write_text(json.dumps(json_doc(spans, **kw)), encoding="utf-8")
    return path


def write_jsonl(path: Path, batches: list[list[S]]) -> Path:
    path.write_text("\n".join(json.dumps(json_doc(b)) for b in batches) + "\n", encoding="utf-8")
    return path


def write_gzip_json(path: Path, spans: list[S]) -> Path:
    path.write_bytes(gzip.compress(json.dumps(json_doc(spans)).encode()))
    return path


# --------------------------------------------------------------------------- protobuf


def _pb_value(target: AnyValue, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, bytes):
        target.bytes_value = value
    elif isinstance(value, list):
        for v in value:
            _pb_value(target.array_value.values.add(), v)
    elif isinstance(value, dict):
        for k, v in value.items():
            kv = target.kvlist_value.values.add()
            kv.key = k
            _pb_value(kv.value, v)
    else:
        target.string_value = value


def _pb_attrs(target, attrs: dict) -> None:
    for k, v in attrs.items():
        kv = target.add()
        kv.key = k
        _pb_value(kv.value, v)


def pb_request(spans: list[S], service: str = "my-agents", scope: str = "tests") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    _pb_attrs(rs.resource.attributes, {"service.name": service})
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = scope, "1.0"
    for s in spans:
        sp = ss.spans.add()
        sp.trace_id, sp.span_id, sp.name, sp.kind = bytes.fromhex(s.trace), bytes.fromhex(s.span), s.name, s.kind
        if s.parent:
            sp.parent_span_id = bytes.fromhex(s.parent)
        sp.start_time_unix_nano = T0 + int(s.start * SECOND)
        sp.end_time_unix_nano = T0 + int(s.end * SECOND)
        _pb_attrs(sp.attributes, s.attrs)
        sp.status.code = s.status
        if s.message:
            sp.status.message = s.message
        for t, p in s.links:
            link = sp.links.add()
            link.trace_id, link.span_id = bytes.fromhex(t), bytes.fromhex(p)
        for n, a in s.events:
            ev = sp.events.add()
            ev.name, ev.time_unix_nano = n, T0
            _pb_attrs(ev.attributes, a)
    return request


def write_pb(path: Path, spans: list[S], gz: bool = False) -> Path:
    raw = pb_request(spans).SerializeToString()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


# --------------------------------------------------------------------------- two conventions


def openinference_trace(trace: str = TRACE_A, session: str | None = None) -> list[S]:
    """A planner agent calls an LLM, which calls a search tool; then hands off to a writer agent."""
    common = {"session.id": session} if session else {}
    return [
        S(trace, sid(1), "planner", 0, 10, attrs={"openinference.span.kind": "AGENT", "agent.name": "planner",
                                                  "input.value": "plan a trip", **common}, status=2, message="gave up"),
        S(trace, sid(2), "ChatCompletion", 1, 3, parent=sid(1), kind=3, attrs={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "be brief",
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": "plan a trip",
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "search first",
            "llm.token_count.prompt": 120, "llm.token_count.completion": 30, "llm.token_count.total": 150,
            "my.custom": "kept", **common}),
        S(trace, sid(3), "search", 3, 4, parent=sid(2), attrs={
            "openinference.span.kind": "TOOL", "tool.name": "web_search", "input.value": '{"q": "flights"}',
            "output.value": "3 results", **common}),
        S(trace, sid(4), "ChatCompletion", 4, 5, parent=sid(1), kind=3, attrs={
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "output.value": "done",
            "llm.token_count.prompt": 200, "llm.token_count.completion": 10, **common}),
        S(trace, sid(5), "writer", 5, 9, parent=sid(1), attrs={
            "openinference.span.kind": "AGENT", "agent.name": "writer", **common}),
        S(trace, sid(6), "ChatCompletion", 6, 8, parent=sid(5), kind=3, attrs={
            "openinference.span.kind": "LLM", "llm.model_name": "claude-3-5-sonnet", "output.value": "a draft",
            **common}),
    ]


def genai_trace(trace: str = TRACE_B, conversation: str | None = None) -> list[S]:
    """The GenAI conventions: invoke_agent, chat (current and deprecated token names), execute_tool."""
    common = {"gen_ai.conversation.id": conversation} if conversation else {}
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}])
    return [
        S(trace, sid(11), "invoke_agent triage", 0, 5, attrs={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage", **common}, status=1),
        S(trace, sid(12), "chat gpt-4.1", 0.5, 1.5, parent=sid(11), kind=3, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1", "gen_ai.response.model": "gpt-4.1-2025",
            "gen_ai.input.messages": messages, "gen_ai.usage.input_tokens": 42, "gen_ai.usage.output_tokens": 7,
            **common}),
        S(trace, sid(13), "execute_tool get_weather", 1.5, 2, parent=sid(12), attrs={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": '{"city": "Paris"}', "gen_ai.tool.call.result": "sunny", **common},
            status=2, events=[("exception", {"exception.type": "TimeoutError", "exception.message": "slow"})]),
        S(trace, sid(14), "chat gpt-4.1", 2, 3, parent=sid(11), kind=3, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1",
            "gen_ai.usage.prompt_tokens": 50, "gen_ai.usage.completion_tokens": 9, **common}),
        S(trace, sid(15), "chat o3", 3, 4, parent=sid(11), kind=3, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "o3", "gen_ai.agent.name": "reviewer", **common},
            links=[(trace, sid(12))]),
    ]
