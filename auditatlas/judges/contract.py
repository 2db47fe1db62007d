"""The reply contract every judge template asks for, and its parser.

A reply is one JSON object; each protocol reads its own keys and ignores the rest:

=========  ==============================================================  ==================
key        meaning                                                         read by
=========  ==============================================================  ==================
agent      the responsible agent's name, exactly as the log spells it      all-at-once
step       the 0-based index of the first mistake step, as the log         all-at-once
           numbers steps (``[step 3]``)
mistake    ``true`` when the step shown is the mistake, else ``false``     step-by-step
half       ``"upper"`` (the earlier half of the segment) or ``"lower"``    binary-search
scores     ``[{"step": i, "p": 0.7}, ...]``: each asked step once,         step-score
           ``p`` an anomaly probability in [0, 1]
reason     a short explanation (kept in the reply cache, never scored)     none
=========  ==============================================================  ==================

Grammar, the same with or without the endpoint's JSON mode: after trimming white space, the
reply is exactly one JSON object, or exactly one fenced block (three backticks, optionally
``json``) holding one; nothing else before or after it. Why so strict: a lenient reader that
fishes the first number out of prose turns "step 1 or 12" into a pick; Who&When's reference
code counted a match by substring, so "1" matched "12".

Matching is exact: ``step`` is a JSON integer (``true`` and ``3.0`` are not steps) inside the
run (or the segment asked about); ``agent`` equals one of the run's agent names after trimming
white space (no case folding, no substring), else the pick names no agent (counted as
``agent_unmatched``; the step still stands). A reply that breaks the grammar, is empty, or
names a step the run does not hold is an **abstention** with its reason: never a hit, never
silently a miss.
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field

FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)
HALVES = ("upper", "lower")


@dataclass(frozen=True)
class Reply:
    """A reply that follows the contract (only the keys present are set)."""

    agent: str | None = None
    step: int | None = None
    mistake: bool | None = None
    half: str | None = None
    scores: dict[int, float] = field(default_factory=dict)
    reason: str | None = None


class Abstention(Exception):
    """A reply that cannot be scored; ``reason`` is one of ``REASONS`` (counted per set)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


# Every abstention is counted under one of these (``params.abstentions`` of a judge's set).
REASONS = {
    "empty": "the reply had no content (a reasoning model out of tokens says finish_reason=length)",
    "unparsed": "the reply is not one JSON object (alone, or alone in one fenced block)",
    "contract": "the object lacks the protocol's key, or a value has the wrong type",
    "step": "the step is not a step of the run (or of the segment asked about)",
    "refused": "the endpoint refused the call (a 4xx other than a rate limit, or a content filter)",
    "failed": "the call failed after every retry (429, 5xx, timeouts, a dropped connection)",
}


def parse_object(text: str | None) -> dict:
    """The reply's JSON object, by the strict grammar above; Abstention otherwise."""
    if text is None or not text.strip():
        raise Abstention("empty")
    body = text.strip()
    fenced = FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    if not body.startswith("{"):
        raise Abstention("unparsed", "the reply does not start with a JSON object")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise Abstention("unparsed", f"not one JSON object ({exc.msg})") from None
    if not isinstance(value, dict):
        raise Abstention("unparsed", "not a JSON object")
    return value


def _step(value: object, allowed: range) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Abstention("contract", f"'step' must be a whole number, not {json.dumps(value)[:40]}")
    if value not in allowed:
        raise Abstention("step", f"step {value} is outside steps {allowed.start}-{allowed.stop - 1}")
    return value


def pick(text: str | None, n_steps: int, agents: Collection[str]) -> Reply:
    """All-at-once: ``step`` (required) and ``agent`` (exact, or None)."""
    obj = parse_object(text)
    if "step" not in obj:
        raise Abstention("contract", "no 'step'")
    step = _step(obj["step"], range(n_steps))
    agent = obj.get("agent")
    # The step is the pick the boards score; an agent the run does not hold (or none) leaves
    # the step standing and is counted apart (``agent_unmatched``): it is a wrong agent, not a
    # guess at the nearest name.
    named = agent.strip() if isinstance(agent, str) and agent.strip() in agents else None
    return Reply(agent=named, step=step, reason=_reason(obj))


def mistake(text: str | None) -> Reply:
    """Step-by-step: ``mistake``, a JSON boolean."""
    obj = parse_object(text)
    value = obj.get("mistake")
    if not isinstance(value, bool):
        raise Abstention("contract", "'mistake' must be true or false")
    return Reply(mistake=value, reason=_reason(obj))


def half(text: str | None) -> Reply:
    """Binary search: ``half``, exactly ``upper`` or ``lower``."""
    obj = parse_object(text)
    value = obj.get("half")
    if value not in HALVES:
        raise Abstention("contract", "'half' must be \"upper\" or \"lower\"")
    return Reply(half=value, reason=_reason(obj))


def scores(text: str | None, asked: range) -> Reply:
    """Step-score: ``scores`` gives each asked step exactly once, p in [0, 1]."""
    obj = parse_object(text)
    value = obj.get("scores")
    if not isinstance(value, list):
        raise Abstention("contract", "'scores' must be a list of {step, p}")
    got: dict[int, float] = {}
    for item in value:
        if not isinstance(item, dict) or "step" not in item or "p" not in item:
            raise Abstention("contract", "each score must be an object {step, p}")
        step = _step(item["step"], asked)
        p = item["p"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
            raise Abstention("contract", f"p of step {step} must be a number from 0 to 1")
        if step in got:
            raise Abstention("contract", f"step {step} is scored twice")
        got[step] = float(p)
    missing = [s for s in asked if s not in got]
    if missing:
        raise Abstention("contract", f"steps {missing[:5]} have no score")
    return Reply(scores=got, reason=_reason(obj))


def _reason(obj: dict) -> str | None:
    reason = obj.get("reason")
    return reason if isinstance(reason, str) else None
