"""An agentpile run record (ATIF v1.7 with agentpile's extension) as runs, steps and edges.

Steps, in the record's order: each ATIF step is one step (``USER``, ``SYSTEM``, or ``LLM`` for
an agent turn, OpenInference's word for a model call as the OTLP adapter uses it), and each tool
call on it is a step of its own right after it (``TOOL:<function>``, ``is_tool``, arguments in,
its results out), so a tool call is the same step whether it arrived as a span or as ATIF.

Edges: a step -> each of its calls is ``tool_call``, ``observed`` (the record states it). The
record's dependency entries, and those agentpile's ``tool_call_id_v1`` rule derives (the next
agent step after a result depends on the call), are edges of the rule's kind; they come from a
stated rule, which the store calls ``modeled`` (``full_context`` is an assumption: ``inferred``).

Labels: agentpile's labels on a step, call or span become the step's label (1/0 from a boolean,
1/0 or a label word; any anomaly wins), ``label_source = 'agentpile_label'``, the labels whole in
``extra.labels`` with their own ``label_source``. Everything no rule maps stays in ``extra``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .kit import json_text
from .kit.traces import (
    CONTEXT,
    DATA,
    INFERRED,
    LABEL_PROCESS_NONE,
    MODELED,
    OBSERVED,
    READ_WRITE,
    TOOL_CALL,
    UNLABELED,
    edge_row,
    extra_json,
)
from .otlp_mapping import TOOL_KIND, backbone, label_value


@dataclass
class Record:
    """One agentpile run record and where it was read."""

    file: str  # relative to the ingested path
    number: int  # 1-based position in its file
    format: str  # our format name
    run: Any  # agentpile.Run


LABEL_SOURCE = "agentpile_label"  # steps.label_source of a step an agentpile label labels
ACTIONS = {"agent": "LLM", "user": "USER", "system": "SYSTEM"}  # ATIF step source -> action
# agentpile dependency rule -> (edge kind, provenance); another rule is ``data`` from a stated rule.
RULES = {"tool_call_id": (DATA, MODELED), "value_flow": (DATA, MODELED), "full_context": (CONTEXT, INFERRED),
         "resource_chain": (READ_WRITE, MODELED), "last_writer": (READ_WRITE, MODELED),
         "prior_reads": (READ_WRITE, MODELED)}
DERIVED_RULES = ("tool_call_id_v1",)  # derived on every record: it pairs by call id only, never guesses
_STEP_MAPPED = ("step_id", "source", "model_name", "tool_calls", "observation")
_EXT_TO_CALLS = ("calls", "result_refs", "result_fields", "result_pos")  # read per call, kept there
_SHOWN = 5


@dataclass
class Mapped:
    tables: dict[str, list[dict]]
    problems: list[InputError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_labeled: int = 0


def map_runs(records: list[Record], corpus: str, origin: str) -> Mapped:
    """The rows of every record as corpus ``corpus``; repeated run ids and bad steps are problems."""
    out = Mapped({"corpora": [], "runs": [], "steps": [], "edges": []})
    seen: dict[str, str] = {}
    unplaced_labels, backward = [], []
    processes: set[str] = set()
    for record in records:
        where = f"record {record.number}"
        rid = record.run.id
        if not isinstance(rid, str) or not rid:
            out.problems.append(InputError(record.file, None, f"{where} has no trajectory_id or session_id."))
            continue
        if rid in seen:
            out.problems.append(InputError(record.file, None, f"{where}: trajectory id '{rid}' is also the id of a "
                                                              f"record in {seen[rid]}; run ids must be unique."))
            continue
        seen[rid] = record.file
        before = len(out.problems)
        run = _Run(record, corpus, out.problems)
        if len(out.problems) > before:
            continue
        out.tables["runs"].append(run.run_row())
        out.tables["steps"].extend(run.steps)
        out.tables["edges"].extend(run.edges)
        out.n_labeled += sum(s["label"] is not None for s in run.steps)
        processes.update(run.processes)
        unplaced_labels.extend(f"{record.file} {where}" for _ in run.unplaced)
        backward.extend(f"{record.file} {where}" for _ in run.backward)
    label_process = _label_process(processes)
    out.tables["corpora"].append({
        "corpus": corpus, "title": corpus, "kind": "real", "label_process": label_process,
        "description": (f"Your own traces: {len(out.tables['runs'])} runs read by agentpile from {origin.rsplit('/', 1)[-1]}"
                        " (ATIF, OpenAI message lists or Claude Code sessions). Steps are the trajectory's turns and "
                        "tool calls; edges are the recorded calls and agentpile's dependency rules."),
    })
    if not out.problems and not out.tables["runs"]:
        out.problems.append(InputError(origin, None, "holds no trajectory; the loaded source was kept."))
    if unplaced_labels:
        out.notes.append(_counted(unplaced_labels, "label(s) name no step of their run (a run, agent or tool label, "
                                                   "or a step that is not there); kept in the run's extra"))
    if backward:
        out.notes.append(_counted(backward, "dependency entr(ies) do not point back in time or name no step; kept in "
                                            "the step's extra, not drawn as an edge"))
    return out


def _label_process(processes: set[str]) -> str:
    return f"agentpile labels ({', '.join(sorted(processes))})" if processes else LABEL_PROCESS_NONE


def _counted(where: list[str], what: str) -> str:
    counts = Counter(where)
    named = ", ".join(f"{w} ({n})" for w, n in list(counts.items())[:_SHOWN])
    more = f" and {len(counts) - _SHOWN} more" if len(counts) > _SHOWN else ""
    return f"{len(where)} {what}: {named}{more}."


class _Run:
    """One record mapped: its steps (message and call rows), edges and run row."""

    def __init__(self, record: Record, corpus: str, problems: list[InputError]) -> None:
        self.record, self.corpus, self.problems = record, corpus, problems
        self.run = record.run.with_deps(DERIVED_RULES)  # the record's own entries are kept as they are
        self.tid = self.run.id
        self.run_id = f"{corpus}:{self.tid}"
        self.outcome = _outcome(self.run.outcome)
        self.steps: list[dict] = []
        self.edges: list[dict] = []
        self.unplaced: list[dict] = []
        self.backward: list[dict] = []
        self.processes: set[str] = set()
        self.models: Counter = Counter()
        self.where = f"record {record.number}"
        atif_steps = [s for s in self.run.steps if not _ext(s).get("empty_source")] if isinstance(
            self.run.record.get("steps"), list) else None
        if not atif_steps:
            problems.append(InputError(record.file, None, f"{self.where} (trajectory '{self.tid}') has no steps; "
                                                          "a run needs at least one."))
            return
        if not all(isinstance(s, dict) for s in atif_steps):
            problems.append(InputError(record.file, None, f"{self.where}: every step must be a JSON object."))
            return
        self.index: dict[tuple, int] = {}
        for step in atif_steps:
            self._add_step(step)
        self._add_labels()
        self._add_deps(atif_steps)
        for row in self.steps:
            row["extra"] = extra_json(row["extra"])

    # ----------------------------------------------------------------------- steps

    def _row(self, step_id: str, agent: str | None, action: str, text_in: str | None, text_out: str | None,
             extra: dict) -> dict:
        return {
            "run_id": self.run_id, "corpus": self.corpus, "step_idx": len(self.steps), "step_id": step_id,
            "agent": agent, "action": action, "scope": self.run_id,
            "scope_success": None if self.outcome == "unknown" else self.outcome == "success",
            "text_in": text_in, "text_out": text_out, "tokens_in": None, "tokens_out": None, "duration_s": None,
            "is_tool": action.startswith(TOOL_KIND), "error_code": None, "failure_mode": None, "label": None,
            "label_source": UNLABELED, "extra": extra,
        }

    def _add_step(self, step: dict) -> None:
        sid, source, sx = step.get("step_id"), step.get("source"), _ext(step)
        declared = self.run.record.get("agent") if isinstance(self.run.record.get("agent"), dict) else {}
        # The acting agent: the step's actor, else the trajectory's agent ("unknown" is agentpile's
        # placeholder for a source that names none), else the ATIF source itself (user, system, agent).
        named = declared.get("name") if declared.get("name") not in (None, "", "unknown") else None
        agent = (sx.get("actor") or named or source) if source == "agent" else source
        # An agent turn's model: its own, else the one the trajectory declares for its agent.
        model = (step.get("model_name") or declared.get("model_name")) if source == "agent" else None
        models = [model] if isinstance(model, str) and model else None
        if models:
            self.models[models[0]] += 1
        metrics = dict(step.get("metrics") or {}) if isinstance(step.get("metrics"), dict) else {}
        rest = {k: v for k, v in step.items() if k not in _STEP_MAPPED and k not in ("message", "metrics", "extra")}
        message = step.get("message")
        text = _text(message)
        row = self._row(str(sid), agent, ACTIONS.get(source, str(source).upper()), None, text, {
            "trajectory_id": self.tid, "atif_step_id": sid, "file": self.record.file,
            "models": models, **rest,
            "message_parts": message if not isinstance(message, str) else None,
            "metrics": {k: v for k, v in metrics.items() if k not in ("prompt_tokens", "completion_tokens")} or None,
            "extra": _step_extra(step), "unpaired_results": _unpaired(step),
        })
        row["tokens_in"], row["tokens_out"] = _count(metrics.get("prompt_tokens")), _count(metrics.get("completion_tokens"))
        if (sx.get("source_fields") or {}).get("subtype") == "api_error":
            row["error_code"] = "api_error"
        self.index[(sid,)] = row["step_idx"]
        self.steps.append(row)
        for call in step.get("tool_calls") or []:
            self._add_call(step, row, call if isinstance(call, dict) else {"raw": call})

    def _add_call(self, step: dict, owner: dict, call: dict) -> None:
        sid, sx, cid = step.get("step_id"), _ext(step), call.get("tool_call_id")
        cx = (sx.get("calls") or {}).get(cid) or {}
        results = _results(step, cid)
        arguments = cx["arguments_raw"] if isinstance(cx.get("arguments_raw"), str) else call.get("arguments")
        outs = [r["text"] for r in results if r["text"] is not None]
        row = self._row(f"{sid}/{cid}", owner["agent"], f"{TOOL_KIND}:{call.get('function_name') or '?'}",
                        _text(arguments), "\n".join(outs) if outs else None, {
                            "trajectory_id": self.tid, "atif_step_id": sid, "call_id": cid, "file": self.record.file,
                            "arguments": call.get("arguments"), "agentpile": cx or None,
                            "results": [r["kept"] for r in results] or None,
                            **{k: v for k, v in call.items() if k not in ("tool_call_id", "function_name", "arguments")},
                        })
        error = cx.get("error") or next((r["error"] for r in results if r["error"]), None)
        if error:
            row["error_code"] = error if isinstance(error, str) else "ERROR"
        self.index[(sid, cid)] = row["step_idx"]
        self.steps.append(row)
        self.edges.append(edge_row(self.run_id, self.corpus, owner["step_idx"], row["step_idx"], TOOL_CALL, OBSERVED))

    # ----------------------------------------------------------------------- labels and deps

    def _locate(self, address: Any) -> int | None:
        """The step an agentpile address names (a step, a call, a call's result), or None."""
        if not isinstance(address, dict) or address.get("trajectory") not in (None, self.tid):
            return None
        if "span" in address:
            return self._locate((self.run.spans.get(address["span"]) or {}).get("address"))
        sid = address.get("step")
        if "call" in address:
            return self.index.get((sid, address["call"]), self.index.get((sid,)))
        if "result" in address:
            step = next((s for s in self.run.steps if s.get("step_id") == sid), {})
            results = (step.get("observation") or {}).get("results") or []
            i = address["result"]
            cid = results[i].get("source_call_id") if isinstance(i, int) and 0 <= i < len(results) else None
            return self.index.get((sid, cid), self.index.get((sid,)))
        return self.index.get((sid,))

    def _add_labels(self) -> None:
        for label in self.run.labels:
            target = label.get("target") if isinstance(label, dict) else None
            kind = (target or {}).get("kind")
            at = self._locate((target or {}).get("address")) if kind in ("step", "call", "span") else None
            if at is None:
                self.unplaced.append(label)
                continue
            row = self.steps[at]
            row["extra"].setdefault("labels", []).append(label)
            value = label_value(label.get("value"))
            if label.get("name") == "failure_mode" and isinstance(label.get("value"), str):
                row["failure_mode"] = label["value"]
            if value is None:
                continue  # a reason, a score, a category: kept in extra, not a 1/0 label
            row["label"] = max(value, row["label"] if row["label"] is not None else 0)
            row["label_source"] = LABEL_SOURCE
            self.processes.add(str(label.get("label_source") or "unnamed"))

    def _add_deps(self, atif_steps: list[dict]) -> None:
        # A rule's entry between two steps the record already links adds nothing to draw.
        pairs: dict[tuple[int, int], tuple[str, str]] = {(e["src_idx"], e["dst_idx"]): ("", "") for e in self.edges}
        observed = set(pairs)
        for step in atif_steps:
            for dep in _ext(step).get("deps") or []:
                src, dst = self._locate((dep or {}).get("src")), self._locate((dep or {}).get("dst"))
                if src is None or dst is None or src >= dst:
                    self.backward.append(dep)
                    continue
                pairs.setdefault((src, dst), RULES.get(str(dep.get("rule")), (DATA, MODELED)))
        self.edges.extend(edge_row(self.run_id, self.corpus, s, d, k, p) for (s, d), (k, p) in sorted(pairs.items())
                          if (s, d) not in observed)
        self.edges.sort(key=lambda e: (e["dst_idx"], e["src_idx"]))

    # ----------------------------------------------------------------------- run

    def run_row(self) -> dict:
        record = self.run.record
        ext = dict(self.run.ext)
        ext.pop("labels", None)
        ext.pop("outcome", None)
        extra = {k: v for k, v in record.items() if k not in ("steps", "extra", "trajectory_id")}
        extra.update({"file": self.record.file, "record": self.record.number, "format": self.record.format,
                      "outcome": self.run.outcome or None, "labels": self.unplaced or None, "agentpile": ext or None,
                      "extra": {k: v for k, v in (record.get("extra") or {}).items() if k != "agentpile"} or None})
        return {
            "run_id": self.run_id, "corpus": self.corpus, "source_file": self.record.file,
            "backbone": backbone(self.models), "domain": None, "difficulty": None, "temperature": None,
            "task_id": str(self.run.task.get("id") or self.tid), "outcome": self.outcome, "n_steps": len(self.steps),
            "label_process": _label_process(self.processes),
            "extra": extra_json(extra, drop_empty=True),
        }


def _ext(obj: Any) -> dict:
    extra = obj.get("extra") if isinstance(obj, dict) else None
    return (extra or {}).get("agentpile") or {} if isinstance(extra, dict) else {}


def _outcome(outcome: dict) -> str:
    success = outcome.get("success") if isinstance(outcome, dict) else None
    return "success" if success is True else "failure" if success is False else "unknown"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63 else None


def _text(value: Any) -> str | None:
    """A text column: a string as it is, ATIF content parts as their text, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        return "\n".join(p["text"] if isinstance(p.get("text"), str) else f"[{p.get('type', 'part')}]" for p in value)
    return json_text(value, ensure_ascii=False)


def _step_extra(step: dict) -> dict | None:
    """The step's own ``extra`` without what the call rows carry (their extension entries)."""
    extra = dict(step.get("extra") or {}) if isinstance(step.get("extra"), dict) else {}
    ext = {k: v for k, v in _ext(step).items() if k not in _EXT_TO_CALLS}
    if ext:
        extra["agentpile"] = ext
    else:
        extra.pop("agentpile", None)
    return extra or None


def _results(step: dict, cid: Any) -> list[dict]:
    """The observation results answering call ``cid``: text, error flag, and what else to keep."""
    sx = _ext(step)
    fields = sx.get("result_fields") or []
    out = []
    for i, result in enumerate((step.get("observation") or {}).get("results") or []):
        if not isinstance(result, dict) or result.get("source_call_id") != cid or cid is None:
            continue
        rf = (fields[i] if i < len(fields) else None) or {}
        out.append({"text": _text(result.get("content")), "error": rf.get("error") or rf.get("is_error"),
                    "kept": {"index": i, **{k: v for k, v in result.items() if k != "content"}, "fields": rf or None}})
    return out


def _unpaired(step: dict) -> list | None:
    """Results the record pairs with no call of this step (kept on the turn that got them)."""
    calls = {c.get("tool_call_id") for c in step.get("tool_calls") or [] if isinstance(c, dict)}
    results = (step.get("observation") or {}).get("results") or []
    kept = [r for r in results if not isinstance(r, dict) or r.get("source_call_id") not in calls
            or r.get("source_call_id") is None]
    return kept or None
