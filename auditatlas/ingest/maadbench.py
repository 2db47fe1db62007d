"""MAADBench trace importer: one room-run JSON file per run, as written by the public runner.

Spec: ``shared/specs/maadbench.md``. The rules implemented here, and why:

Files
    A folder is read recursively (runner layout ``run_.../<ts>_EscapeRoom_<room>_<escaped|failed>.json``
    or the archived ``<model>/<domain>/run_.../`` one); only ``*.json`` files count, so
    ``summary.csv`` and ``run.log`` are ignored, and hidden folders (``.ipynb_checkpoints``...)
    are skipped. Every fact comes from the file itself, never from folder names, because the
    two layouts disagree on what a folder name says. Every ``*.json`` file must be a trace:
    a stray JSON file in a trace folder is reported, not skipped, so nothing vanishes silently.

Runs
    ``run_id`` is ``<corpus>:<path under the ingested root without .json>``: room ids repeat
    across backbones, temperatures and seeds, the path does not. The backbone is
    ``config.llm.model`` (a ``provider/`` prefix dropped) shown under the paper's table names;
    unknown model strings (e.g. legacy ``claude-sonnet-4-20250514``) are kept as they are so
    they never merge with a different model. ``outcome`` is ``escaped`` (true = success);
    a file without ``escaped`` gets ``unknown`` rather than a guess.

Steps
    One step per ``trace[]`` entry, LLM actions and ``UNIT_TOOL_CALL`` entries alike; the list
    position is the step index (the runner stores none). ``OBSERVE_PLANNED_CLUE`` is shown as
    ``OBSERVE_CLUE`` (the paper counts it as that action; the original stays in ``extra``).
    Legacy v2 entries (``message``/``structured``, ids like ``P1_OBSERVE_CLUE``) are accepted;
    their ``message`` is the agent's output text (v2 stored no prompt), so it goes to
    ``text_out`` and ``text_in`` stays empty. A missing ``puzzle_id`` is recovered from the
    action id.

Labels (deterministic, from the runner's verifier)
    ``verification.status`` wrong -> 1, correct -> 0 (tool calls: ``anomaly_label`` when the
    status is absent); no status but non-empty ``schema_errors`` -> 1 as a format error;
    anything else (e.g. a nightmare SELECT_PUZZLE of a locked puzzle, which the runner leaves
    unverified) is kept unlabeled (null), never silently normal.

Failure modes and cascades
    ``is_cascade``: an earlier step of the same puzzle in the same run already failed. A
    trace's ``fm_id`` is kept (the code's "4.3" is FM-5 and shown so); without one, a failed
    cascade step is FM-5, the paper's cascade rule.

Edges
    The runner's wiring, in :mod:`auditatlas.ingest.maadbench_wiring`.

Bad input
    Reading a file (unreadable, empty or malformed JSON, a top level that is not an object,
    missing ``config``/``room``/``trace``, deep nesting, lone surrogates) is the toolkit's
    (``kit.jsonfiles.load_object``); here, wrong types (``trace`` not a list, ``escaped`` not a
    bool, an entry without ``action``) and numbers where the format defines them: token counts
    are whole numbers from 0 below 2**63, a temperature is finite and in [0, 2] (the providers'
    range), a duration is finite and >= 0, a confidence finite. Each is an :class:`InputError`
    naming file and field; a folder with one bad file lands nothing (``kit.documents``).

Speed: one pass per file (orjson); each row is one tuple in the toolkit's row buffers
(``kit.rows``). About 21 us per step (48k steps/s on one core of the 2-core dev box, warm);
``bench/README.md`` has the end-to-end figures.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..actions import ALIASES, BACKBONE_NAMES, TOOL_CALL, TRACE_NAMES
from ..errors import IngestFailed, InputError
from . import Batch, Context
from .kit import (
    RunBuffers,
    as_text,
    compact,
    count_at,
    json_type,
    number_at,
    number_field,
    object_at,
    object_field,
    readable,
    show,
    string_field,
    text_or_none,
)
from .kit.documents import RunDocuments, file_chunks
from .maadbench_wiring import parent_notes, run_edges

if TYPE_CHECKING:
    from .stream import Chunk, Plan

FORMAT = "maadbench"
DEFAULT_SOURCE = "maadbench"
LABEL_PROCESS = "deterministic verifier"
REQUIRED_KEYS = ("config", "room", "trace")
WHAT = "a MAADBench trace"  # how problems name a file of this format
ITEMS = "trace"  # the list of steps: a step's field is reported as trace[i].<field>
# Provider APIs take temperatures in [0, 2].
TEMPERATURE_RANGE = (0.0, 2.0)


# The code stores MAST FM-5 (error propagation) as "4.3".
_FM_DISPLAY = {"4.3": "FM-5", "FM-4.3": "FM-5"}

RUN_COLUMNS = (
    "run_id", "corpus", "source_file", "backbone", "temperature", "domain", "difficulty",
    "task_id", "room_id", "outcome", "n_steps", "label_process", "extra",
)
STEP_COLUMNS = (
    "run_id", "corpus", "step_idx", "step_id", "agent", "action", "scope", "scope_success",
    "text_in", "text_out", "tokens_in", "tokens_out", "duration_s", "confidence", "is_tool",
    "error_code", "failure_mode", "is_cascade", "label", "is_format_error", "label_source",
    "extra",
)
EDGE_COLUMNS = ("run_id", "corpus", "src_idx", "dst_idx", "kind", "provenance")


# ---------------------------------------------------------------------------------------------
# Public contract


def can_read(path: Path) -> bool:
    """A MAADBench trace file, or a folder whose first JSON files include one."""
    return TRACES.can_read(path)


def read(path: Path | None, context: Context, *, corpus: str = "maadbench", kind: str = "real",
         source: str | None = None) -> Batch:
    """Read a MAADBench trace file or folder (recursively) into the schema, in one batch.

    ``corpus``/``kind``/``source`` name the corpus and store source. ``ingest`` streams through
    :func:`plan` instead; this one-batch form is the reference the streaming path is tested
    against, and what callers that want the tables in hand use.
    """
    del context  # this format needs nothing from the store
    files = TRACES.files(path)
    chunk = convert_files(files, corpus)
    if chunk.problems:
        raise IngestFailed(chunk.problems)
    tables = {"corpora": [corpus_row(corpus, kind)], **chunk.tables}
    counts = chunk.counters
    meta = {"corpus": corpus, "kind": kind, "files": len(files), "runs": counts["runs"], "steps": counts["steps"]}
    return Batch(source=source or DEFAULT_SOURCE, tables=tables, notes=summary_notes(counts), meta=meta)


# Rooms per chunk of a streaming ingest: about 9 steps a room, so a chunk is ~20k steps, a few
# tens of MB on a worker, and a million rooms make ~500 parts per table.
CHUNK_FILES = 2000


def plan(path: Path | None, context: Context, *, corpus: str = "maadbench", kind: str = "real",
         source: str | None = None, chunk_files: int = CHUNK_FILES) -> Plan:
    """The same conversion as :func:`read`, as a streaming plan (``ingest.stream``), in chunks
    of files in run-id order, so the parts come out sorted by run without a merge."""
    from functools import partial

    from .stream import Plan

    del context
    files = TRACES.files(path)
    return Plan(source=source or DEFAULT_SOURCE, chunks=file_chunks(files, chunk_files),
                convert=partial(convert_files, corpus=corpus), head={"corpora": [corpus_row(corpus, kind)]},
                meta={"corpus": corpus, "kind": kind, "files": len(files)}, notes=summary_notes)


def convert_files(files: list[tuple[str, str]], corpus: str) -> Chunk:
    """One chunk of a streaming ingest: ``(file, path under the root)`` pairs into tables."""
    return TRACES.convert_files(files, corpus)


def convert_documents(documents: Iterable[tuple[str, dict]], corpus: str) -> Chunk:
    """Already-parsed runs (``(path under the root, document)``), converted exactly as files are.

    The simulator hands its rooms over this way, skipping a JSON round trip through the disk.
    """
    return TRACES.convert_documents(documents, corpus)


def summary_notes(counters: dict[str, int]) -> list[str]:
    """What a finished ingest tells the user (the same lines :func:`read` gives)."""
    notes = [f"{counters.get('runs', 0)} runs and {counters.get('steps', 0)} steps read from "
             f"{counters.get('files', 0)} file(s)."]
    if counters.get("unlabeled"):
        notes.append(f"{counters['unlabeled']} step(s) carry no verifier status and no schema errors; kept unlabeled.")
    return notes + parent_notes(counters)


def normalise_backbone(model: str | None) -> str | None:
    """The paper's display name for a model string; unknown strings are kept unchanged."""
    if model is None:
        return None
    short = model.rsplit("/", 1)[-1].strip()
    return BACKBONE_NAMES.get(short.lower(), model)


def display_failure_mode(fm_id: Any) -> str | None:
    """``fm_id`` as the paper shows it: "4.3" -> "FM-5", "2.6" -> "FM-2.6"."""
    if fm_id is None or fm_id == "":
        return None
    text = str(fm_id).strip()
    if text in _FM_DISPLAY:
        return _FM_DISPLAY[text]
    return text if text.upper().startswith("FM") else f"FM-{text}"


# ---------------------------------------------------------------------------------------------
# Rows


# Runs converted before their rows become Arrow columns (``kit.rows`` says why it is bounded).
FLUSH_RUNS = 1000


class _Output(RunBuffers):
    """One chunk's row buffers, plus the counters the summary notes report."""

    def __init__(self) -> None:
        super().__init__({"runs": RUN_COLUMNS, "steps": STEP_COLUMNS, "edges": EDGE_COLUMNS}, FLUSH_RUNS)
        self.runs, self.steps, self.edges = self.tables["runs"], self.tables["steps"], self.tables["edges"]
        self.inferred_parents = 0
        self.dropped_parents = 0
        self.unlabeled = 0

    def on_flush(self) -> None:
        self.unlabeled += self.steps.count_null("label")


def _counters(out: _Output) -> dict[str, int]:
    return {"runs": len(out.runs), "steps": len(out.steps), "unlabeled": out.unlabeled,
            "inferred_parents": out.inferred_parents, "dropped_parents": out.dropped_parents}


# ---------------------------------------------------------------------------------------------
# One run


def _convert_run(doc: dict, rel: str, corpus: str, out: _Output, problems: list[InputError]) -> None:
    config = object_field(doc["config"], rel, "config", problems)
    room = object_field(doc["room"], rel, "room", problems)
    trace = doc["trace"]
    if not isinstance(trace, list):
        problems.append(InputError(rel, "trace", f"must be a list of steps, got a JSON {json_type(trace)}."))
    if config is None or room is None or not isinstance(trace, list):
        return

    llm = object_field(config.get("llm", {}), rel, "config.llm", problems) or {}
    benchmark = object_field(config.get("benchmark", {}), rel, "config.benchmark", problems) or {}
    model = string_field(llm.get("model"), rel, "config.llm.model", problems)
    temperature = number_field(llm.get("temperature"), rel, "config.llm.temperature", problems, *TEMPERATURE_RANGE)
    room_id = string_field(room.get("room_id"), rel, "room.room_id", problems)
    difficulty = string_field(room.get("difficulty"), rel, "room.difficulty", problems)
    if difficulty is None and room.get("type") == "planning":
        difficulty = "nightmare"
    puzzles = room.get("puzzles", [])
    if not isinstance(puzzles, list) or not all(isinstance(p, dict) for p in puzzles):
        problems.append(InputError(rel, "room.puzzles", "must be a list of puzzle objects."))
        puzzles = []
    escaped = doc.get("escaped")
    if escaped is not None and not isinstance(escaped, bool):
        problems.append(InputError(rel, "escaped", f"must be true or false, got {show(escaped)}."))

    domain = _clue_domain(benchmark, room, puzzles)
    run_id = f"{corpus}:{rel[:-5] if rel.endswith('.json') else rel}"
    solved = _solved_puzzles(room, puzzles, room_id)
    n_steps = _convert_steps(trace, rel, run_id, corpus, room_id, solved, out, problems)

    outcome = "unknown" if escaped is None else ("success" if escaped else "failure")
    out.runs.append((
        run_id, corpus, rel, normalise_backbone(model), temperature, domain, difficulty,
        _task_id(domain, benchmark, config), room_id, outcome, n_steps, LABEL_PROCESS,
        _run_extra(doc, llm, trace),
    ))


def _clue_domain(benchmark: dict, room: dict, puzzles: list[dict]) -> str | None:
    domain = benchmark.get("clue_domain") or room.get("clue_domain")
    if not domain:
        for puzzle in puzzles:
            clue = puzzle.get("clue")
            if isinstance(clue, dict) and clue.get("domain"):
                return str(clue["domain"])
    return str(domain) if domain else None


def _task_id(domain: str | None, benchmark: dict, config: dict) -> str | None:
    """Clue domain plus tool mode, the split key the benchmark groups rooms by."""
    tools = benchmark.get("unit_tools")
    if tools is None and isinstance(config.get("system"), dict):
        tools = config["system"].get("unit_tools")
    if domain and isinstance(tools, bool):
        return f"{domain}_{'tool' if tools else 'no_tool'}"
    return domain


def _run_extra(doc: dict, llm: dict, trace: list) -> str:
    extra: dict[str, Any] = {
        "puzzles_solved": doc.get("puzzles_solved"),
        "puzzles_total": doc.get("puzzles_total"),
        "timing_sec": doc.get("timing_sec"),
        "seed": llm.get("seed"),
    }
    if any(isinstance(e, dict) and _is_legacy(e) for e in trace):
        extra["trace_format"] = "v2"
    report = doc.get("failure_report")
    if not trace and isinstance(report, dict) and report.get("error"):
        extra["failure_report_error"] = report["error"]  # a crashed room: say why it has no steps
    return compact(extra)


def _solved_puzzles(room: dict, puzzles: list[dict], room_id: str | None) -> set[str]:
    """Ids of solved puzzles, under both room ids and nightmare DAG ids (linked by item type)."""
    solved: set[str] = set()
    by_item: dict[str, str] = {}
    for puzzle in puzzles:
        pid = _short_puzzle(puzzle.get("puzzle_id"), room_id)
        item = puzzle.get("item")
        if pid and isinstance(item, dict) and item.get("type"):
            by_item[str(item["type"])] = pid
        if pid and puzzle.get("solved") is True:
            solved.add(pid)
    solved_ids = room.get("solved_ids")
    if isinstance(solved_ids, list):
        solved.update(s for s in (_short_puzzle(x, room_id) for x in solved_ids) if s)
    dag = room.get("dag")
    if isinstance(dag, dict) and isinstance(dag.get("puzzles"), list):
        for node in dag["puzzles"]:
            if not isinstance(node, dict):
                continue
            dag_id, room_pid = node.get("puzzle_id"), by_item.get(str(node.get("item_name")))
            if not dag_id or not room_pid:
                continue
            if dag_id in solved or room_pid in solved:
                solved.update((str(dag_id), room_pid))
    return solved


# ---------------------------------------------------------------------------------------------
# Steps


def _convert_steps(
    trace: list,
    rel: str,
    run_id: str,
    corpus: str,
    room_id: str | None,
    solved: set[str],
    out: _Output,
    problems: list[InputError],
) -> int:
    failed_scopes: set[str | None] = set()
    actions: list[str] = []
    scopes: list[str | None] = []
    step_ids: list[str | None] = []
    parents: list[str | None] = []
    for i, entry in enumerate(trace):
        # Field names are spelled out only for a problem: this loop runs once per step.
        if not isinstance(entry, dict):
            problems.append(InputError(rel, f"trace[{i}]", f"must be an object, got a JSON {json_type(entry)}."))
            continue
        raw_action = entry.get("action")
        if not isinstance(raw_action, str) or not raw_action:
            problems.append(InputError(rel, f"trace[{i}].action", "is missing; every trace entry names its action."
                                       if raw_action is None or raw_action == "" else
                                       f"must be a string naming the action, got a JSON {json_type(raw_action)} "
                                       f"({show(raw_action)})."))
            continue
        action = ALIASES.get(raw_action, raw_action)
        step_id = text_or_none(entry.get("action_id"))
        scope = _scope_of(entry, step_id, room_id)
        verification = object_at(entry.get("verification"), rel, ITEMS, i, "verification", problems)
        stats = object_at(entry.get("call_statistic"), rel, ITEMS, i, "call_statistic", problems) or {}

        label, label_source, is_format_error = _label(entry, verification, raw_action == TOOL_CALL)
        is_cascade = scope in failed_scopes
        if label == 1:
            failed_scopes.add(scope)
        fm_id = verification.get("fm_id") if verification else None
        failure_mode = display_failure_mode(fm_id) or ("FM-5" if label == 1 and is_cascade else None)

        out.steps.append((
            run_id, corpus, i, step_id, text_or_none(entry.get("agent")), action, scope,
            (scope in solved) if scope is not None else None,
            _text_in(entry), _text_out(entry),
            count_at(stats.get("input_tokens"), rel, ITEMS, i, "call_statistic.input_tokens", problems),
            count_at(stats.get("output_tokens"), rel, ITEMS, i, "call_statistic.output_tokens", problems),
            number_at(stats.get("duration"), rel, ITEMS, i, "call_statistic.duration", problems, 0.0),
            number_at(entry.get("confidence"), rel, ITEMS, i, "confidence", problems, None),
            raw_action == TOOL_CALL,
            _error_code(verification) if label != 0 else None,
            failure_mode, is_cascade, label, is_format_error, label_source,
            _step_extra(entry, raw_action, action, verification, stats),
        ))
        actions.append(action)
        scopes.append(scope)
        step_ids.append(step_id)
        parents.append(text_or_none(entry.get("parent_action_id")))

    if len(actions) == len(trace):  # edges only make sense over a complete trace
        for src, dst, kind, provenance in run_edges(actions, scopes, step_ids, parents, out):
            out.edges.append((run_id, corpus, src, dst, kind, provenance))
    return len(trace)


def _label(entry: dict, verification: dict | None, is_tool: bool) -> tuple[int | None, str, bool]:
    """(label, label_source, is_format_error) by the spec's deterministic rule."""
    status = verification.get("status") if verification else None
    if status == "wrong":
        return 1, "verifier", False
    if status == "correct":
        return 0, "verifier", False
    if is_tool and verification and verification.get("anomaly_label") in (0, 1) \
            and not isinstance(verification.get("anomaly_label"), bool):
        return int(verification["anomaly_label"]), "verifier", False
    if entry.get("schema_errors"):
        return 1, "schema_errors", True
    return None, "unlabeled", False


def _error_code(verification: dict | None) -> str | None:
    if not verification:
        return None
    code = verification.get("desc") or verification.get("error_type")
    return str(code) if code else None


def _scope_of(entry: dict, step_id: str | None, room_id: str | None) -> str | None:
    """The puzzle a step works on; legacy entries may only carry it inside the action id."""
    pid = _short_puzzle(entry.get("puzzle_id"), room_id)
    if pid or not step_id:
        return pid
    bare = _short_puzzle(step_id, room_id) or ""
    cuts = [pos for name in TRACE_NAMES if (pos := bare.find("_" + name)) > 0]
    return bare[: min(cuts)] if cuts else None


def _short_puzzle(value: Any, room_id: str | None) -> str | None:
    """``room_0007_P2`` -> ``P2``: trace and room ids may or may not carry the room prefix."""
    if value is None or value == "":
        return None
    text = str(value)
    if room_id and text.startswith(room_id + "_"):
        text = text[len(room_id) + 1:]
    return text or None


def _is_legacy(entry: dict) -> bool:
    return "output_structured" not in entry and "input" not in entry and ("structured" in entry or "message" in entry)


def _text_in(entry: dict) -> str | None:
    return as_text(entry.get("input"))


def _text_out(entry: dict) -> str | None:
    if "output_message" in entry or "output_structured" in entry:
        message, structured = entry.get("output_message"), entry.get("output_structured")
    else:  # legacy v2
        message, structured = entry.get("message"), entry.get("structured")
    parts = [p for p in (as_text(message), None if structured is None else readable(structured)) if p]
    return "\n".join(parts) if parts else None


# Entry and verification keys kept in a step's ``extra`` (when non-empty), in file order.
_ENTRY_EXTRA = frozenset((
    "parent_action_id", "call_index", "clue_problem_id", "tool_execution", "avail_at_select",
    "solved_at_select", "schema_errors",
))
_VERIFICATION_EXTRA = frozenset(("error_type", "fm_id", "fm_name", "fm_category"))
_INJECTION_KEYS = ("prompt_injection", "injection", "prompt_injection_induced")
_INJECTION_SET = frozenset(_INJECTION_KEYS)
_EMPTY = (None, "", {}, [])


def _step_extra(entry: dict, raw_action: str, action: str, verification: dict | None, stats: dict) -> str | None:
    # Iterating the entry's own keys (about fifteen) beats probing every candidate key.
    extra: dict[str, Any] = {k: v for k, v in entry.items() if k in _ENTRY_EXTRA and v not in _EMPTY}
    if raw_action != action:
        extra["original_action"] = raw_action
    attempt = entry.get("attempt")
    if attempt not in (None, 1):
        extra["attempt"] = attempt  # only retries are worth a note
    if verification:
        status = verification.get("status")
        if status not in (None, "correct", "wrong"):
            extra["status"] = status  # an unknown status is kept visible, not mapped
        extra.update((k, v) for k, v in verification.items() if k in _VERIFICATION_EXTRA and v not in _EMPTY)
    if stats.get("timed_out"):
        extra["timed_out"] = True
    if stats.get("superlong_reasoning"):
        extra["superlong_reasoning"] = True
    if not _INJECTION_SET.isdisjoint(entry) and any(entry.get(k) for k in _INJECTION_KEYS):
        extra["injected"] = True
    if _is_legacy(entry):
        extra["trace_format"] = "v2"
    return compact(extra) if extra else None


# The format as the toolkit's one-object-per-run-file skeleton runs it (``kit.documents``).
TRACES = RunDocuments(what=WHAT, required=REQUIRED_KEYS, buffers=_Output, convert=_convert_run, counters=_counters)


def corpus_row(corpus: str, kind: str) -> dict:
    simulated = kind == "simulated"
    return {
        "corpus": corpus,
        "title": "MAADBench (simulated)" if simulated else "MAADBench",
        "kind": kind,
        "label_process": LABEL_PROCESS,
        "description": (
            ("Simulated rooms in the MAADBench trace format. " if simulated else
             "MAADBench escape-room runs of an LLM multi-agent system (Ma et al., 2026). ")
            + "Step labels come from the runner's deterministic verifier (verification.status); "
            "a step without a status but with schema errors is a format anomaly; other "
            "unverified steps stay unlabeled."
        ),
    }
