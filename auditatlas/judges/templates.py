"""Prompt templates: one file per protocol shipped in ``templates/``, or a user's own file.

A template is the user message, with ``$name`` (or ``${name}``) variables filled from the run's
fields in the store (``$$`` is a literal dollar). Which variables each protocol fills is
``VARIABLES``; a template naming any other is refused with one sentence naming the file and
the variable, before any call is made. The template's text and its sha256 are stored with the
judge's prediction set, and the hash is part of every cached reply's key, so editing a
template never reuses replies to the old text.
"""
from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import AtlasError

PROTOCOLS = ("all_at_once", "step_by_step", "binary_search", "step_score")

# What every protocol fills, from the store (runs, steps), then each protocol's own.
COMMON = {
    "task": "the run's task: runs.extra.question where the corpus has one (Who&When), else runs.task_id",
    "task_id": "runs.task_id",
    "ground_truth": "the task's correct answer (runs.extra.ground_truth) with --with-truth, else empty",
    "truth_block": "with --with-truth, a '## Correct answer' section holding it; else empty",
    "n_steps": "the run's number of steps (runs.n_steps)",
    "first_step": "the first step shown",
    "last_step": "the last step shown",
    "agents": "the run's agents (steps.agent), comma-separated, in order of first appearance",
    "log": "the steps shown, each '[step i] agent (action[, tool]):' then steps.text_in as 'input:' "
           "when present and steps.text_out",
}
OWN = {
    "all_at_once": {},
    "step_by_step": {"step_idx": "the step under review (the last one shown)",
                     "step_agent": "its agent", "step_action": "its action"},
    "binary_search": {"range_start": "the segment's first step", "range_end": "its last step",
                      "upper_start": "the earlier half's first step", "upper_end": "its last step",
                      "lower_start": "the later half's first step", "lower_end": "its last step"},
    "step_score": {},
}
VARIABLES: dict[str, dict[str, str]] = {p: {**COMMON, **OWN[p]} for p in PROTOCOLS}


@dataclass(frozen=True)
class Template:
    protocol: str
    origin: str  # "package:<file>" or the user's path
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def render(self, values: Mapping[str, object]) -> str:
        return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})


def placeholders(text: str) -> tuple[list[str], list[str]]:
    """The variables a template names, and the text of each invalid ``$`` placeholder."""
    named, invalid = [], []
    for m in string.Template.pattern.finditer(text):
        if m.group("named") or m.group("braced"):
            named.append(m.group("named") or m.group("braced"))
        elif m.group("invalid") is not None:
            start = m.start("invalid")
            invalid.append(text[start:start + 12].splitlines()[0] if text[start:] else "$")
    return named, invalid


def load(protocol: str, path: str | Path | None = None) -> Template:
    """The protocol's template: the shipped file, or the user's ``path`` (checked)."""
    if protocol not in PROTOCOLS:
        raise AtlasError(f"--protocol '{protocol}' is not one of: {', '.join(p.replace('_', '-') for p in PROTOCOLS)}.")
    if path is None:
        text = resources.files(__package__).joinpath("templates", f"{protocol}.txt").read_text(encoding="utf-8")
        return Template(protocol, f"package:{protocol}.txt", text)
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise AtlasError(f"--template {path} cannot be read ({exc.strerror or exc}).") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AtlasError(f"--template {path} is not UTF-8 text (byte {exc.start}).") from None
    if not text.strip():
        raise AtlasError(f"--template {path} is empty; a template is the prompt with $variables.")
    check(text, protocol, str(path))
    return Template(protocol, str(path), text)


def check(text: str, protocol: str, where: str) -> None:
    named, invalid = placeholders(text)
    if invalid:
        raise AtlasError(f"--template {where}: '{invalid[0]}' is not a $variable (write $$ for a dollar sign).")
    unknown = sorted(set(named) - set(VARIABLES[protocol]))
    if unknown:
        raise AtlasError(f"--template {where}: variable ${unknown[0]} is not one the {protocol.replace('_', '-')} "
                         f"protocol fills; it fills: {', '.join('$' + v for v in VARIABLES[protocol])}.")
    if "log" not in named:
        raise AtlasError(f"--template {where}: it never names $log, so the judge would not see the steps.")


def render_log(steps: Sequence[Mapping[str, object]]) -> str:
    """The steps as the judge reads them (``$log``)."""
    lines = []
    for s in steps:
        action = str(s.get("action") or "step")
        head = f"[step {s['step_idx']}] {s.get('agent') or 'unknown'} ({action}{', tool' if s.get('is_tool') else ''}):"
        text_in, text_out = s.get("text_in"), s.get("text_out")
        body = []
        if text_in:
            body.append(f"input:\n{text_in}")
            body.append(f"output:\n{text_out or ''}")
        else:
            body.append(str(text_out or ""))
        lines.append(head + "\n" + "\n".join(body))
    return "\n\n".join(lines)
