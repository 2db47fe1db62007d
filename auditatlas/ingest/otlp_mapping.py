"""What a span's attributes mean for a step: the OpenInference and OTel GenAI conventions.

Each rule reads the attribute names of both conventions (OpenInference first, then GenAI,
then the deprecated GenAI names) and says which attributes it used, so the adapter can keep
every other attribute in the step's ``extra``. ``data/README.md`` ("OTLP traces") states the
mapping as a table; keep the two in step.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .kit import json_text
from .otlp_spans import Span

AGENT_KEYS = ("agent.name", "gen_ai.agent.name")
SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
MODEL_KEYS = ("llm.model_name", "gen_ai.request.model", "gen_ai.response.model")
TOOL_KEYS = ("tool.name", "gen_ai.tool.name")
TOKENS_IN = ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
TOKENS_OUT = ("llm.token_count.completion", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
TEXT_IN = ("input.value", "gen_ai.input.messages", "gen_ai.prompt", "gen_ai.tool.call.arguments")
TEXT_OUT = ("output.value", "gen_ai.output.messages", "gen_ai.completion", "gen_ai.tool.call.result")
KIND_KEYS = ("openinference.span.kind", "gen_ai.operation.name")
ANNOTATION_PREFIX = "annotation."

# GenAI operation names -> the OpenInference span kind they are (the kinds name the action).
GENAI_KINDS = {
    "chat": "LLM", "text_completion": "LLM", "generate_content": "LLM", "embeddings": "EMBEDDING",
    "execute_tool": "TOOL", "invoke_agent": "AGENT", "create_agent": "AGENT",
}
AGENT_KIND = "AGENT"
TOOL_KIND = "TOOL"
_INPUT_MESSAGE = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(role|content|name)$")
_OUTPUT_MESSAGE = re.compile(r"^llm\.output_messages\.(\d+)\.message\.(role|content|name)$")
# Label words an annotation may use instead of 1/0 (compared lower-case).
ANOMALY_WORDS = frozenset({"1", "true", "anomaly", "anomalous", "incorrect", "wrong", "fail", "failure", "failed",
                           "error", "bad", "hallucinated", "unsafe"})
NORMAL_WORDS = frozenset({"0", "false", "normal", "correct", "right", "pass", "passed", "success", "ok", "good",
                          "factual", "safe"})


# How traces become runs (``--group``): one run per trace, or per session.
GROUPS = ("trace", "session")
ANNOTATION_SOURCE = "span_annotation"  # steps.label_source of a label read from annotation.* attributes
LABEL_PROCESS_ANNOTATIONS = "span annotations (annotation.* attributes)"
# Sources that are the OTLP format's, so `--corpus NAME` may replace them (the labels adapter
# rewrites an OTLP source with its labels; see auditatlas/ingest/labels.py).
OWN_FORMATS = ("otlp", "labels")



def group_type(text: str) -> str:
    """``--group``: how traces become runs (argparse shows the sentence of a bad value)."""
    import argparse

    if text not in GROUPS:
        raise argparse.ArgumentTypeError(f"choose one of {', '.join(GROUPS)}, not '{text}'")
    return text



@dataclass
class StepFacts:
    """What the conventions give one span, plus the attribute names they consumed."""

    kind: str  # LLM, TOOL, AGENT, CHAIN, ... or span:<otel kind>
    action: str
    own_agent: str | None
    text_in: str | None
    text_out: str | None
    tokens_in: int | None
    tokens_out: int | None
    models: list[str]
    error_code: str | None
    annotation: dict[str, Any] | None  # the span's own label, when an annotation gives one
    used: set[str] = field(default_factory=set)


def facts(span: Span) -> StepFacts:
    """The convention fields of one span."""
    a, used = span.attrs, set()
    kind = _kind(span, used)
    tool = _first(a, TOOL_KEYS, used)
    operation = a.get("gen_ai.operation.name") if isinstance(a.get("gen_ai.operation.name"), str) else None
    if kind == TOOL_KIND and tool:
        action = f"{TOOL_KIND}:{tool}"
    elif operation and not kind.startswith("span:"):
        action = f"{kind}:{operation}"
    else:
        action = kind
    models = [str(a[k]) for k in MODEL_KEYS if isinstance(a.get(k), str) and a[k]]
    used.update(k for k in MODEL_KEYS if k in a)
    return StepFacts(
        kind=kind, action=action, own_agent=_first(a, AGENT_KEYS, used),
        text_in=_text(a, TEXT_IN, _INPUT_MESSAGE, used), text_out=_text(a, TEXT_OUT, _OUTPUT_MESSAGE, used),
        tokens_in=_count(a, TOKENS_IN, used), tokens_out=_count(a, TOKENS_OUT, used),
        models=list(dict.fromkeys(models)), error_code=_error_code(span),
        annotation=_annotation(a, used), used=used,
    )


def session_of(span: Span) -> str | None:
    for key in SESSION_KEYS:
        value = span.attrs.get(key, span.resource.get(key))
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def backbone(models: Counter) -> str | None:
    """The most frequent model of a run (ties: the alphabetically first, so re-ingests agree)."""
    if not models:
        return None
    top = max(models.values())
    return min(m for m, n in models.items() if n == top)


# --------------------------------------------------------------------------- rules


def _kind(span: Span, used: set[str]) -> str:
    a = span.attrs
    oi = a.get("openinference.span.kind")
    if isinstance(oi, str) and oi:
        used.add("openinference.span.kind")
        return oi.upper()
    operation = a.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation:
        used.add("gen_ai.operation.name")
        return GENAI_KINDS.get(operation, "LLM" if any(k in a for k in MODEL_KEYS) else operation.upper())
    # No convention: the OTel span kind is all the span says about what it did.
    return f"span:{span.kind.lower()}"


def _first(a: dict, keys: tuple[str, ...], used: set[str]) -> str | None:
    for key in keys:
        value = a.get(key)
        if isinstance(value, str) and value:
            used.add(key)
            return value
    return None


def _count(a: dict, keys: tuple[str, ...], used: set[str]) -> int | None:
    for key in keys:
        value = a.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            used.add(key)
            return value
    return None


def _text(a: dict, keys: tuple[str, ...], flattened: re.Pattern, used: set[str]) -> str | None:
    """The first of ``keys`` present, else the OpenInference message list flattened into attributes."""
    for key in keys:
        if key in a and a[key] is not None and a[key] != "":
            used.add(key)
            return _readable(a[key])
    messages: dict[int, dict[str, Any]] = {}
    for key, value in a.items():
        m = flattened.match(key)
        if m:
            messages.setdefault(int(m.group(1)), {})[m.group(2)] = value
            used.add(key)
    if not messages:
        return None
    return "\n".join(_message_line(messages[i]) for i in sorted(messages))


def _message_line(message: dict[str, Any]) -> str:
    who = message.get("name") or message.get("role")
    content = _readable(message.get("content")) or ""
    return f"{who}: {content}" if who else content


def _readable(value: Any) -> str:
    """A text column: a string as it is (GenAI message lists are JSON text already), else JSON."""
    return value if isinstance(value, str) else json_text(value, ensure_ascii=False)


def _error_code(span: Span) -> str | None:
    """ERROR status as the step's error code: the error or exception type when the span names one."""
    if span.status != "ERROR":
        return None
    kind = span.attrs.get("error.type")
    if not isinstance(kind, str) or not kind:
        kind = next((e.get("attributes", {}).get("exception.type") for e in span.events
                     if e.get("name") == "exception" and isinstance(e.get("attributes", {}).get("exception.type"), str)),
                    None)
    return kind or "ERROR"


def _annotation(a: dict, used: set[str]) -> dict[str, Any] | None:
    """The span's label from ``annotation.*`` attributes (flat, named or indexed), or None.

    ``annotation.label`` / ``annotation.<name>.label`` / ``annotation.<i>.label`` (1/0, true/false
    or a word of :data:`ANOMALY_WORDS` / :data:`NORMAL_WORDS`), else ``score`` 1/0 in the same
    places; ``decisive``, ``failure_mode`` and ``note`` / ``explanation`` beside it. Every
    ``annotation.*`` attribute is consumed: the whole group is kept as the step's annotation.
    """
    group = {k[len(ANNOTATION_PREFIX):]: v for k, v in a.items() if k.startswith(ANNOTATION_PREFIX)}
    if not group:
        return None
    used.update(ANNOTATION_PREFIX + k for k in group)
    label = None
    for key in sorted(group, key=lambda k: (k.count("."), k)):
        leaf = key.rsplit(".", 1)[-1]
        if leaf in ("label", "score"):
            label = label_value(group[key])
            if label is not None:
                break
    pick = {leaf: v for k, v in group.items() if (leaf := k.rsplit(".", 1)[-1]) in ("decisive", "failure_mode", "note",
                                                                                        "explanation")}
    return {"label": label, "decisive": label_value(pick.get("decisive")) == 1,
            "failure_mode": pick.get("failure_mode"), "note": pick.get("note", pick.get("explanation")),
            "attributes": group}


def label_value(value: Any) -> int | None:
    """A label as 1 (anomaly) / 0 (normal): a boolean, 1/0, or a word of :data:`ANOMALY_WORDS` /
    :data:`NORMAL_WORDS`; None for anything else (a reason, a score, a category)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        word = value.strip().lower()
        return 1 if word in ANOMALY_WORDS else 0 if word in NORMAL_WORDS else None
    return None
