"""Who&When (Zhang et al., 2025): failed multi-agent runs with a human-labelled decisive step.

Input: one JSON object per run file (``Who&When/<split>/<n>.json``); ``path`` is a single file
or a folder searched recursively for ``*.json`` (a split folder or the Who&When root holding
``Algorithm-Generated`` and ``Hand-Crafted``). The split is the file's parent folder name.

Why not ``agentpile``: its offline loader wants the ``ROOT/Who&When/<split>`` layout rather than
any folder or file, keeps no parsed ``history`` on the run (the CatchBench sha256 run key is over
the whole parsed file, so every file must be read again anyway), numbers steps from 1, and is
lenient where we must refuse (it drops a non-integer ``mistake_step`` silently and stops at the
first malformed file). It is also not a declared dependency. Reading the files ourselves is
shorter than working around all of that.

Mapping choices (see also ``data/README.md``):

- ``action`` is the history entry's ``role``; the data records no finer action.
- ``domain`` is the benchmark the question comes from: GAIA question ids are UUIDs,
  AssistantBench ids are 64 hex digits (their ``level`` is Easy/Medium/Hard, GAIA's 1/2/3).
- ``backbone`` stays null: the release does not name the model; the agent system
  (CaptainAgent for Algorithm-Generated, Magentic-One for Hand-Crafted) goes into ``extra``.
- Edges are all inferred, because Who&When records no dependencies: every step saw the whole
  earlier history (``context`` edges, i -> j for every i < j) and control passes along the
  chain (``handoff`` edges, i -> i+1). Context edges grow as n(n-1)/2 per run: 45 for a
  10-step Algorithm-Generated run (5,389 edges over the split), 8,385 for the longest (130-step)
  Hand-Crafted run, on the order of 10^5 over the Hand-Crafted split (58 runs, median 32
  steps). That is fine at this corpus size and is the honest graph; a much larger corpus in
  this format would want the context kept implicit instead.
- ``legacy_key`` (Algorithm-Generated only) comes from the CatchBench key map. ``NNN`` is the
  file's position in plain-string path order, but ``<hex>`` is a digest ("order-prefixed-md5-v1")
  we could not reproduce from the record (two files with identical ``history`` share it, so it
  digests some rendering of the history), so we look the run's sha256 key up in the shipped map
  instead of recomputing the legacy key. A run missing from the map gets no legacy key (noted).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import Batch, Context
from .kit import first_json, json_text, load_json, loads, show
from .kit.compressed import read_maybe_gzip
from .kit.releases import read_runs

FORMAT = "whowhen"
SOURCE = "whowhen"
CORPUS = "whowhen"
TITLE = "Who&When"
LABEL_PROCESS = "human decisive step (Who&When)"
LABEL_SOURCE = "human_decisive_step"
LEGACY_SPLIT = "Algorithm-Generated"
TOOL_AGENT = "Computer_terminal"
TOOL_PREFIXES = ("exitcode", "code output")
AGENT_SYSTEMS = {"Algorithm-Generated": "CaptainAgent", "Hand-Crafted": "Magentic-One"}
OUTCOME_FIELDS = ("is_correct", "is_corrected")  # Algorithm-Generated, Hand-Crafted spelling

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_INT_TEXT = re.compile(r"^\s*\d+\s*$")


@dataclass
class _Step:
    agent: str
    role: str | None
    content: str


@dataclass
class _Run:
    file: Path
    split: str
    stem: str
    record: dict
    steps: list[_Step]
    success: bool
    mistake_step: int

    @property
    def run_id(self) -> str:
        return f"{CORPUS}:{self.split}/{self.stem}"


# --------------------------------------------------------------------------- public


def can_read(path: Path) -> bool:
    """True when ``path`` (or the first JSON file under it) looks like a Who&When run."""
    record = first_json(path)
    return isinstance(record, dict) and "history" in record and "mistake_step" in record


def read(path: Path | None, context: Context) -> Batch:
    """Every run under ``path`` converted into runs, steps, edges and one corpora row."""
    runs = read_runs(path, "Who&When", _read_file, _check_unique)
    path = Path(path)  # not None: read_runs refused that

    legacy = legacy_keys()
    run_rows, step_rows, edge_rows, unmapped = [], [], [], []
    for run in runs:
        key = run_key(run.record)
        legacy_key = legacy.get(key) if run.split == LEGACY_SPLIT else None
        if run.split == LEGACY_SPLIT and legacy_key is None:
            unmapped.append(run.run_id)
        run_rows.append(_run_row(run, relative_name(run.file, path), key, legacy_key))
        step_rows.extend(_step_rows(run))
        edge_rows.extend(_edge_rows(run))

    notes = [f"{len(runs)} runs, {len(step_rows)} steps, {len(edge_rows)} inferred edges (full context + hand-off)."]
    if unmapped:
        notes.append(
            f"{len(unmapped)} Algorithm-Generated run(s) are not in the CatchBench key map "
            f"(edited copies?), so judge predictions will not join them: {', '.join(unmapped[:5])}"
        )
    return Batch(
        source=SOURCE,
        tables={"corpora": [_corpus_row()], "runs": run_rows, "steps": step_rows, "edges": edge_rows},
        notes=notes,
        meta={"files": len({run.file for run in runs})},  # every file holds a run, or the read failed
    )


def run_key(record: Any) -> str:
    """The CatchBench content key of a parsed run file: sha256 over its canonical JSON."""
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def legacy_keys() -> dict[str, str]:
    """sha256 run key -> CatchBench legacy ``NNN-<hex>`` key, read from the shipped key map."""
    ref = resources.files("catchbench") / "data/llm_judge/legacy_run_keys.json"
    mapping = loads(read_maybe_gzip(ref))["keys"]
    return {sha: legacy for legacy, sha in mapping.items()}


def relative_name(file: Path, path: Path) -> str:
    """The file as the store keeps it: relative to the ingested folder (no machine paths)."""
    return file.name if path.is_file() else file.relative_to(path).as_posix()


# --------------------------------------------------------------------------- parsing


def _read_file(file: Path, problems: list[InputError]) -> list[_Run]:
    """The file's one run (a Who&When file holds one), or none when it has a problem."""
    run = _read_run(file, problems)
    return [] if run is None else [run]


def _read_run(file: Path, problems: list[InputError]) -> _Run | None:
    record = load_json(file, problems, expected="one Who&When run (a JSON object)")
    if record is None:
        return None
    if not isinstance(record, dict):
        problems.append(InputError(file, None, f"expected one JSON object per run, found {type(record).__name__}."))
        return None
    before = len(problems)
    steps = _parse_history(file, record, problems)
    success = _parse_outcome(file, record, problems)
    mistake = _parse_mistake_step(file, record, len(steps) if steps is not None else None, problems)
    _check_text_fields(file, record, problems)
    if len(problems) > before or steps is None or success is None or mistake is None:
        return None
    return _Run(file, file.parent.name, file.stem, record, steps, success, mistake)


def _parse_history(file: Path, record: dict, problems: list[InputError]) -> list[_Step] | None:
    history = record.get("history")
    if history is None:
        problems.append(InputError(file, "history", "is missing; a run needs its list of steps."))
        return None
    if not isinstance(history, list):
        problems.append(InputError(file, "history", f"must be a list of steps, found {type(history).__name__}."))
        return None
    if not history:
        problems.append(InputError(file, "history", "is empty; a run needs at least one step."))
        return None
    steps = [_parse_entry(file, i, entry, problems) for i, entry in enumerate(history)]
    return None if any(s is None for s in steps) else steps  # type: ignore[return-value]


def _parse_entry(file: Path, i: int, entry: Any, problems: list[InputError]) -> _Step | None:
    where = f"history[{i}]"
    if not isinstance(entry, dict):
        problems.append(InputError(file, where, f"must be an object with content and role, found {type(entry).__name__}."))
        return None
    content, name, role = entry.get("content"), entry.get("name"), entry.get("role")
    ok = True
    if not isinstance(content, str):
        problems.append(InputError(file, f"{where}.content", f"must be a string, found {type(content).__name__}."))
        ok = False
    # Hand-Crafted entries carry no `name`; their `role` is the agent.
    agent = name if isinstance(name, str) and name else role
    if not isinstance(agent, str) or not agent:
        problems.append(InputError(file, f"{where}.name", "is missing and there is no role to name the agent."))
        ok = False
    if role is not None and not isinstance(role, str):
        problems.append(InputError(file, f"{where}.role", f"must be a string, found {type(role).__name__}."))
        ok = False
    return _Step(agent, role, content) if ok else None


def _parse_outcome(file: Path, record: dict, problems: list[InputError]) -> bool | None:
    field = next((f for f in OUTCOME_FIELDS if f in record), None)
    if field is None:
        problems.append(InputError(file, OUTCOME_FIELDS[0], "is missing (nor is there is_corrected); the run outcome is unknown."))
        return None
    value = record[field]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    problems.append(InputError(file, field, f"must be true or false (or the strings \"True\"/\"False\"), found {show(value)}."))
    return None


def _parse_mistake_step(file: Path, record: dict, n_steps: int | None, problems: list[InputError]) -> int | None:
    if "mistake_step" not in record:
        problems.append(InputError(file, "mistake_step", "is missing; every Who&When run names its decisive step."))
        return None
    value = record["mistake_step"]
    if isinstance(value, bool) or not isinstance(value, (int, str)) or (isinstance(value, str) and not _INT_TEXT.match(value)):
        problems.append(InputError(file, "mistake_step", f"must be a whole number (a string holding an int), found {show(value)}."))
        return None
    step = int(value)
    if n_steps is not None and not 0 <= step < n_steps:
        problems.append(InputError(file, "mistake_step", f"is {step}, outside the history's steps 0..{n_steps - 1}."))
        return None
    return step


def _check_text_fields(file: Path, record: dict, problems: list[InputError]) -> None:
    task_id = record.get("question_ID")
    if isinstance(task_id, bool) or not isinstance(task_id, (str, int)):
        problems.append(InputError(file, "question_ID", f"must be a string id, found {show(task_id)}."))
    for field in ("question", "mistake_agent", "mistake_reason"):
        if record.get(field) is not None and not isinstance(record[field], str):
            problems.append(InputError(file, field, f"must be a string, found {type(record[field]).__name__}."))
    level = record.get("level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, (str, int))):
        problems.append(InputError(file, "level", f"must be a string or int, found {type(level).__name__}."))


def _check_unique(runs: list[_Run], problems: list[InputError]) -> None:
    seen: dict[str, Path] = {}
    for run in runs:
        if run.run_id in seen:
            problems.append(InputError(run.file, None, f"gives run id {run.run_id}, already used by {seen[run.run_id]}; ingest one copy of each split."))
        seen.setdefault(run.run_id, run.file)


# --------------------------------------------------------------------------- rows


def _domain(task_id: str) -> str | None:
    if _UUID.match(task_id):
        return "GAIA"
    if _HEX64.match(task_id):
        return "AssistantBench"
    return None


def _run_row(run: _Run, source_file: str, key: str, legacy_key: str | None) -> dict:
    rec = run.record
    task_id = str(rec["question_ID"])
    extra = {
        "question": rec.get("question"),
        "ground_truth": rec.get("ground_truth"),
        "mistake_agent": rec.get("mistake_agent"),
        "mistake_step": run.mistake_step,
        "mistake_reason": rec.get("mistake_reason"),
        "level": rec.get("level"),
        "split": run.split,
        "agent_system": AGENT_SYSTEMS.get(run.split),
    }
    if "labels" in rec:  # one Algorithm-Generated file carries a failure category
        extra["labels"] = rec["labels"]
    return {
        "run_id": run.run_id,
        "corpus": CORPUS,
        "source_file": source_file,
        "backbone": None,
        "domain": _domain(task_id),
        "difficulty": None if rec.get("level") is None else str(rec["level"]),
        "task_id": task_id,
        "outcome": "success" if run.success else "failure",
        "n_steps": len(run.steps),
        "label_process": LABEL_PROCESS,
        "run_key": key,
        "legacy_key": legacy_key,
        "extra": json_text(extra, ensure_ascii=False),
    }


def is_tool_step(agent: str, content: str) -> bool:
    """The spec's tool-step rule: the code executor, or text that is an execution result."""
    return agent == TOOL_AGENT or content.lstrip().lower().startswith(TOOL_PREFIXES)


def _step_rows(run: _Run) -> list[dict]:
    return [
        {
            "run_id": run.run_id,
            "corpus": CORPUS,
            "step_idx": i,
            "step_id": str(i),
            "agent": step.agent,
            "action": step.role,
            "scope": run.run_id,
            "scope_success": run.success,
            "text_out": step.content,
            "is_tool": is_tool_step(step.agent, step.content),
            "label": 1 if i == run.mistake_step else 0,
            "label_source": LABEL_SOURCE,
        }
        for i, step in enumerate(run.steps)
    ]


def _edge_rows(run: _Run) -> list[dict]:
    n = len(run.steps)
    base = {"run_id": run.run_id, "corpus": CORPUS, "provenance": "inferred"}
    context = [{**base, "src_idx": i, "dst_idx": j, "kind": "context"} for j in range(n) for i in range(j)]
    handoff = [{**base, "src_idx": i, "dst_idx": i + 1, "kind": "handoff"} for i in range(n - 1)]
    return context + handoff


def _corpus_row() -> dict:
    return {
        "corpus": CORPUS,
        "title": TITLE,
        "kind": "real",
        "label_process": LABEL_PROCESS,
        "description": (
            "Failed LLM multi-agent runs (CaptainAgent and Magentic-One on GAIA and AssistantBench "
            "questions) with a human label for the decisive mistake step and agent (Zhang et al., 2025)."
        ),
    }
