"""tau-bench historical trajectories (Yao et al., 2024): customer-service runs with tool calls.

Input: one JSON file holding a list of runs (the sierra ``historical_trajectories`` layout,
e.g. ``gpt-4o-airline.json``), or a folder searched recursively for such ``*.json`` files.
agentpile's ``tau_bench`` loader reads the AgentSuite JSONL release, not this list, so this
module reads it directly.

Mapping choices (see also ``data/README.md``):

- ``backbone`` and ``domain`` come from the file name ``<model>-<airline|retail>...``; the
  domain falls back to the system prompt's policy title; the backbone is "unknown" otherwise.
- Steps skip the system message (the policy, identical across runs of a domain). A user
  message is agent ``user``, action ``user_message``; an assistant message is the model
  (its backbone, or ``assistant``), action ``assistant_message``, or ``tool_call:<names>``
  when it issues tool calls, so per-action views can tell which tool the decision chose.
  Its ``text_out`` is the message text followed by the tool calls as JSON. A tool message is
  agent ``env``, action = the tool name, ``is_tool`` true, ``text_in`` = the call's arguments.
- ``step_id`` is the message's position in ``traj`` (system message included), so a step can be
  found in the release file.
- Edges: a tool result answers the assistant call with the same id (``tool_call``, observed).
  A write tool result depends on every earlier database-read tool result (``read_write``,
  modeled): the edge targets the write's *tool step*, because that is where the database
  changes; the assistant step that issued the write already reaches it through its
  ``tool_call`` edge, so the read -> call -> write path is still complete.
- Labels are run-level only (``reward``): step labels stay null.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import Batch, Context
from .kit import first_json, is_count, json_text, load_json, show
from .kit.releases import read_runs

FORMAT = "taubench"
SOURCE = "taubench"
CORPUS = "taubench"
TITLE = "tau-bench"
LABEL_PROCESS = "run outcome (reward)"
LABEL_SOURCE = "none (run outcome only)"
WRITE_PREFIXES = ("book_", "cancel_", "modify_", "update_", "return_", "exchange_", "send_")
NOT_DATABASE = frozenset({"calculate", "think", "transfer_to_human_agents", "list_all_airports"})
DOMAINS = ("airline", "retail")
_FILE_NAME = re.compile(rf"^(?P<model>.+?)-(?P<domain>{'|'.join(DOMAINS)})(?:[._-].*)?$")
ROLES = ("system", "user", "assistant", "tool")


def is_write_tool(name: str) -> bool:
    return name.startswith(WRITE_PREFIXES)


def is_read_tool(name: str) -> bool:
    """A tool that reads the database: neither a write nor one of the state-free helpers."""
    return not is_write_tool(name) and name not in NOT_DATABASE


@dataclass
class _Step:
    message_idx: int
    role: str
    text: str
    tool_names: list[str] = field(default_factory=list)  # assistant: calls it issued
    call_ids: list[str] = field(default_factory=list)
    tool_name: str | None = None  # tool: which tool answered
    tool_call_id: str | None = None
    arguments: str | None = None


@dataclass
class _Run:
    file: Path
    index: int  # position in the file's list, for error messages
    task_id: int
    trial: int
    reward: float
    user_id: str | None
    instruction: str | None
    steps: list[_Step]
    domain_hint: str | None

    @property
    def run_id(self) -> str:
        return f"{CORPUS}:{self.file.stem}/{self.task_id}-{self.trial}"

    @property
    def success(self) -> bool:
        return self.reward == 1.0


# --------------------------------------------------------------------------- public


def can_read(path: Path) -> bool:
    """True when ``path`` (or the first JSON file under it) is a list of runs with ``traj``."""
    data = first_json(path)
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "traj" in data[0] and "reward" in data[0]


def read(path: Path | None, context: Context) -> Batch:
    """Every run under ``path`` converted into runs, steps, edges and one corpora row."""
    runs = read_runs(path, "tau-bench", _read_file, _check_unique)
    path = Path(path)  # not None: read_runs refused that

    run_rows, step_rows, edge_rows = [], [], []
    for run in runs:
        backbone, domain = _backbone_domain(run)
        run_rows.append(_run_row(run, relative_name(run.file, path), backbone, domain))
        step_rows.extend(_step_rows(run, backbone))
        edge_rows.extend(_edge_rows(run))
    n_success = sum(run.success for run in runs)
    notes = [f"{len(runs)} runs ({n_success} success, {len(runs) - n_success} failure), {len(step_rows)} steps, {len(edge_rows)} edges."]
    return Batch(
        source=SOURCE,
        tables={"corpora": [_corpus_row()], "runs": run_rows, "steps": step_rows, "edges": edge_rows},
        notes=notes,
        meta={"files": len({run.file for run in runs})},  # every file holds a run, or the read failed
    )


def relative_name(file: Path, path: Path) -> str:
    """The file as the store keeps it: relative to the ingested folder (no machine paths)."""
    return file.name if path.is_file() else file.relative_to(path).as_posix()


# --------------------------------------------------------------------------- parsing


def _read_file(file: Path, problems: list[InputError]) -> list[_Run]:
    data = load_json(file, problems, expected="a JSON list of tau-bench runs")
    if data is None:
        return []
    if not isinstance(data, list):
        problems.append(InputError(file, None, f"expected a JSON list of runs, found {type(data).__name__}."))
        return []
    if not data:
        problems.append(InputError(file, None, "holds an empty list; there are no runs to read."))
        return []
    runs = [_parse_run(file, i, item, problems) for i, item in enumerate(data)]
    return [r for r in runs if r is not None]


def _parse_run(file: Path, i: int, item: Any, problems: list[InputError]) -> _Run | None:
    where = f"[{i}]"
    if not isinstance(item, dict):
        problems.append(InputError(file, where, f"must be a run object, found {type(item).__name__}."))
        return None
    before = len(problems)
    for name in ("task_id", "trial"):  # both count from 0 in the release
        value = item.get(name)
        if not is_count(value):  # task ids and trials must fit the store's 64-bit integers
            problems.append(InputError(file, f"{where}.{name}", f"must be a whole number >= 0, found {show(value)}."))
    reward = item.get("reward")
    # Compared without float(): float() of a huge integer raises OverflowError.
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not (reward == 0 or reward == 1):
        problems.append(InputError(file, f"{where}.reward", f"must be 0.0 (failure) or 1.0 (success), found {show(reward)}."))
    user_id, instruction = _parse_task_info(file, where, item.get("info"), problems)
    steps, domain_hint = _parse_traj(file, where, item.get("traj"), problems)
    if len(problems) > before or steps is None:
        return None
    return _Run(file, i, item["task_id"], item["trial"], float(reward), user_id, instruction, steps, domain_hint)


def _parse_task_info(file: Path, where: str, info: Any, problems: list[InputError]) -> tuple[str | None, str | None]:
    """user_id and instruction; ``info`` is optional context, so only wrong types are errors."""
    if info is None:
        return None, None
    if not isinstance(info, dict):
        problems.append(InputError(file, f"{where}.info", f"must be an object, found {type(info).__name__}."))
        return None, None
    task = info.get("task")
    if task is None:
        return None, None
    if not isinstance(task, dict):
        problems.append(InputError(file, f"{where}.info.task", f"must be an object, found {type(task).__name__}."))
        return None, None
    values = []
    for name in ("user_id", "instruction"):
        value = task.get(name)
        if value is not None and not isinstance(value, str):
            problems.append(InputError(file, f"{where}.info.task.{name}", f"must be a string, found {type(value).__name__}."))
            value = None
        values.append(value)
    return values[0], values[1]


def _parse_traj(file: Path, where: str, traj: Any, problems: list[InputError]) -> tuple[list[_Step] | None, str | None]:
    if traj is None:
        problems.append(InputError(file, f"{where}.traj", "is missing; a run needs its message list."))
        return None, None
    if not isinstance(traj, list):
        problems.append(InputError(file, f"{where}.traj", f"must be a list of messages, found {type(traj).__name__}."))
        return None, None
    before = len(problems)
    steps: list[_Step] = []
    domain_hint = None
    calls: dict[str, tuple[str, str]] = {}  # call id -> (tool name, arguments) issued so far
    for j, message in enumerate(traj):
        at = f"{where}.traj[{j}]"
        step = _parse_message(file, at, j, message, calls, problems)
        if step is None:
            continue
        if step.role == "system":
            domain_hint = domain_hint or _domain_from_policy(step.text)
        else:
            steps.append(step)
    if len(problems) > before:
        return None, None
    if not steps:
        problems.append(InputError(file, f"{where}.traj", "holds no user, assistant or tool messages."))
        return None, None
    return steps, domain_hint


def _parse_message(file: Path, at: str, j: int, message: Any, calls: dict, problems: list[InputError]) -> _Step | None:
    if not isinstance(message, dict):
        problems.append(InputError(file, at, f"must be a message object, found {type(message).__name__}."))
        return None
    role = message.get("role")
    if role not in ROLES:
        problems.append(InputError(file, f"{at}.role", f"must be one of {', '.join(ROLES)}, found {show(role)}."))
        return None
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        problems.append(InputError(file, f"{at}.content", f"must be a string or null, found {type(content).__name__}."))
        return None
    step = _Step(j, role, content or "")
    if role == "assistant" and message.get("tool_calls"):
        return _parse_calls(file, at, step, message["tool_calls"], calls, problems)
    if role == "tool":
        return _parse_tool_result(file, at, step, message, calls, problems)
    return step


def _parse_calls(file: Path, at: str, step: _Step, tool_calls: Any, calls: dict, problems: list[InputError]) -> _Step | None:
    if not isinstance(tool_calls, list):
        problems.append(InputError(file, f"{at}.tool_calls", f"must be a list, found {type(tool_calls).__name__}."))
        return None
    for k, call in enumerate(tool_calls):
        here = f"{at}.tool_calls[{k}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(function, dict):
            problems.append(InputError(file, here, "must be an object with a string id and a function object."))
            return None
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not name:
            problems.append(InputError(file, f"{here}.function.name", f"must be a tool name, found {show(name)}."))
            return None
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)  # some exports store the object
        calls[call["id"]] = (name, arguments)
        step.tool_names.append(name)
        step.call_ids.append(call["id"])
    calls_json = json_text(tool_calls, ensure_ascii=False)
    step.text = f"{step.text}\n\n{calls_json}" if step.text else calls_json
    return step


def _parse_tool_result(file: Path, at: str, step: _Step, message: dict, calls: dict, problems: list[InputError]) -> _Step | None:
    call_id, name = message.get("tool_call_id"), message.get("name")
    if not isinstance(call_id, str) or call_id not in calls:
        problems.append(InputError(file, f"{at}.tool_call_id", f"{show(call_id)} answers no earlier assistant tool call."))
        return None
    called_name, arguments = calls[call_id]
    if name is not None and not isinstance(name, str):
        problems.append(InputError(file, f"{at}.name", f"must be a tool name, found {show(name)}."))
        return None
    step.tool_name = name or called_name
    step.tool_call_id = call_id
    step.arguments = arguments
    return step


def _domain_from_policy(text: str) -> str | None:
    head = text.lstrip().splitlines()[0].lower() if text.strip() else ""
    return next((d for d in DOMAINS if d in head), None)


def _check_unique(runs: list[_Run], problems: list[InputError]) -> None:
    seen: set[str] = set()
    for run in runs:
        if run.run_id in seen:
            problems.append(InputError(run.file, f"[{run.index}].trial", f"task {run.task_id} trial {run.trial} appears twice (run id {run.run_id})."))
        seen.add(run.run_id)


# --------------------------------------------------------------------------- rows


def _backbone_domain(run: _Run) -> tuple[str, str | None]:
    match = _FILE_NAME.match(run.file.name.removesuffix(".json"))
    if match:
        return match["model"], match["domain"]
    return "unknown", run.domain_hint


def _run_row(run: _Run, source_file: str, backbone: str, domain: str | None) -> dict:
    extra = {"trial": run.trial, "reward": run.reward, "user_id": run.user_id, "instruction": run.instruction}
    return {
        "run_id": run.run_id,
        "corpus": CORPUS,
        "source_file": source_file,
        "backbone": backbone,
        "domain": domain,
        "task_id": str(run.task_id),
        "outcome": "success" if run.success else "failure",
        "n_steps": len(run.steps),
        "label_process": LABEL_PROCESS,
        "extra": json_text(extra, ensure_ascii=False),
    }


def _agent_action(step: _Step, model: str) -> tuple[str, str]:
    if step.role == "user":
        return "user", "user_message"
    if step.role == "tool":
        return "env", step.tool_name or "tool"
    if step.tool_names:
        return model, "tool_call:" + ",".join(step.tool_names)
    return model, "assistant_message"


def _step_rows(run: _Run, backbone: str) -> list[dict]:
    model = backbone if backbone != "unknown" else "assistant"
    rows = []
    for i, step in enumerate(run.steps):
        agent, action = _agent_action(step, model)
        extra = {"tool_call_id": step.tool_call_id} if step.tool_call_id else ({"tool_call_ids": step.call_ids} if step.call_ids else None)
        rows.append({
            "run_id": run.run_id,
            "corpus": CORPUS,
            "step_idx": i,
            "step_id": str(step.message_idx),
            "agent": agent,
            "action": action,
            "scope": run.run_id,
            "scope_success": run.success,
            "text_in": step.arguments,
            "text_out": step.text,
            "is_tool": step.role == "tool",
            "label": None,
            "label_source": LABEL_SOURCE,
            "extra": json_text(extra) if extra else None,
        })
    return rows


def _edge_rows(run: _Run) -> list[dict]:
    base = {"run_id": run.run_id, "corpus": CORPUS}
    caller: dict[str, int] = {}  # call id -> step index of the assistant message issuing it
    reads: list[int] = []  # database-read tool steps seen so far
    edges = []
    for i, step in enumerate(run.steps):
        for call_id in step.call_ids:
            caller[call_id] = i
        if step.role != "tool":
            continue
        edges.append({**base, "src_idx": caller[step.tool_call_id], "dst_idx": i, "kind": "tool_call", "provenance": "observed"})
        name = step.tool_name or ""
        if is_write_tool(name):
            edges.extend({**base, "src_idx": r, "dst_idx": i, "kind": "read_write", "provenance": "modeled"} for r in reads)
        elif is_read_tool(name):
            reads.append(i)
    return edges


def _corpus_row() -> dict:
    return {
        "corpus": CORPUS,
        "title": TITLE,
        "kind": "real",
        "label_process": LABEL_PROCESS,
        "description": (
            "Customer-service agent conversations with tool calls (airline and retail domains), "
            "scored by whether the final database state matches the goal (Yao et al., 2024)."
        ),
    }
