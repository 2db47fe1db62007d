"""Your own trajectories through agentpile's readers: ATIF, OpenAI message lists, Claude Code sessions.

``auditatlas ingest atif|messages|claude-code PATH --corpus NAME`` reads every file under PATH
with that agentpile reader; ``ingest traces`` asks every agentpile reader whether it recognizes
each file, as ``agentpile.load`` does, and refuses a file no reader or several readers claim
instead of guessing. agentpile turns each record into its run record (an ATIF v1.7 trajectory
with its labels and dependency entries under ``extra["agentpile"]``); :mod:`.trajectory_mapping`
maps that record onto the store (table in ``data/README.md``, "Trajectories through agentpile").

What this module adds to agentpile's readers is what a store import needs: one sentence per
problem naming the file and its line or record (a file that is not the format, an empty file,
a line that is not JSON, which agentpile's Claude Code reader only counts, a record without
steps, an ATIF version agentpile was not tested with), whole folders, and all-or-nothing: any
problem leaves the store as it was.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import AtlasError, IngestFailed, InputError
from . import Batch, Context
from .kit import decode_text, first_line, json_type, parse_documents, read_raw, show
from .kit.traces import check_source_name
from .trajectory_mapping import Record, map_runs

# Our format name -> agentpile's reader, what the file is called in a sentence, what it must hold.
READERS = {"atif": "atif", "messages": "openai-messages", "claude-code": "claude-code-jsonl"}
WHAT = {"atif": "an ATIF trajectory", "messages": "an OpenAI message list", "claude-code": "a Claude Code session"}
NEEDS = {
    "atif": 'a JSON object (or one per line) with "schema_version" "ATIF-v1.7" and "steps"',
    "messages": 'a JSON list of {"role", "content"} messages, or {"messages": [...]} documents (JSON or one per line)',
    "claude-code": "a .jsonl file of typed records carrying sessionId, uuid and version",
}
# Every import of these formats may replace the others' source of the same name (one family).
OWN_FORMATS = ("atif", "messages", "claude-code", "traces")
SUFFIXES = (".json", ".jsonl", ".ndjson")
JSONL_SUFFIXES = (".jsonl", ".ndjson")


def can_read(path: Path, fmt: str) -> bool:
    files = trajectory_files(Path(path))
    return bool(files) and READERS[fmt] in recognized(files[0][0])


def read_format(path: Path | None, context: Context, corpus: str | None, fmt: str | None) -> Batch:
    """Every file under ``path`` read as ``fmt`` (None: detected per file) into corpus ``corpus``."""
    verb = fmt or "traces"
    if path is None or corpus is None:
        raise AtlasError(f"ingest {verb} needs a PATH and --corpus NAME.")
    check_source_name(context.store, corpus, OWN_FORMATS, "a corpus of your own traces")
    path = Path(path)
    problems: list[InputError] = []
    files = trajectory_files(path)
    if not files:
        raise IngestFailed([InputError(path, None, f"holds no {', '.join(SUFFIXES)} files (gzip allowed).")])
    records: list[Record] = []
    for file, rel in files:
        docs = _check_text(file, rel, fmt, problems)
        if docs is None:
            continue
        chosen = fmt or _detected(file, rel, problems)
        if chosen is not None:
            records.extend(_read_file(file, rel, chosen, fmt is not None, problems, docs))
    if problems:
        raise IngestFailed(problems)
    mapped = map_runs(records, corpus, str(path))
    if mapped.problems:
        raise IngestFailed(mapped.problems)
    tables = mapped.tables
    formats = sorted({r.format for r in records})
    notes = [f"{len(tables['runs'])} runs ({', '.join(formats)}), {len(tables['steps'])} steps, "
             f"{len(tables['edges'])} edges, {mapped.n_labeled} labeled steps.", *mapped.notes]
    return Batch(source=corpus, tables=tables, notes=notes, meta={"files": len(files), "formats": formats})


def trajectory_files(path: Path) -> list[tuple[Path, str]]:
    """``(file, path under the root)`` of every JSON / JSONL file (gzip allowed) under ``path``.

    In a folder, files under a ``subagents`` folder are left out: agentpile's Claude Code reader
    reads them with the session file that starts them.
    """
    if path.is_file():
        return [(path, path.name)]
    if not path.is_dir():
        return []
    found = []
    for file in sorted(path.rglob("*")):
        rel = file.relative_to(path)
        if file.is_file() and _suffix(file) in SUFFIXES and "subagents" not in rel.parts[:-1]:
            found.append((file, rel.as_posix()))
    return found


def recognized(file: Path) -> list[str]:
    """The agentpile readers that recognize ``file``, asked as ``agentpile.load`` asks them
    (a reader that fails to load or to sniff counts as not recognizing it)."""
    import agentpile

    names = []
    for name in agentpile.readers.names():
        try:
            ok = bool(agentpile.readers.get(name).sniff(file))
        except Exception:  # noqa: BLE001 - agentpile's own rule: a broken reader never blocks the others
            ok = False
        if ok:
            names.append(name)
    return names


# --------------------------------------------------------------------------- one file


def _suffix(file: Path) -> str:
    suffixes = [s for s in file.suffixes if s != ".gz"]
    return suffixes[-1].lower() if suffixes else ""


def _check_text(file: Path, rel: str, fmt: str | None, problems: list[InputError]) -> list | None:
    """The file's documents (with their lines) when it is UTF-8 JSON (every non-empty line, for
    JSONL) and not empty; else None after one problem. Read by the adapters' one reader: gzip
    inflated in a stream, refused past its size limit."""
    expected = WHAT[fmt] if fmt else "a trajectory (ATIF, an OpenAI message list or a Claude Code session)"
    raw = read_raw(file, rel, problems)
    text = decode_text(raw, rel, problems, f"; expected {expected}") if raw is not None else None
    if text is None:
        return None
    if not text.strip():
        problems.append(InputError(rel, None, f"is empty; expected {expected}."))
        return None
    return parse_documents(text, rel, problems, lines=_suffix(file) in JSONL_SUFFIXES)


# The values ATIF v1.7 gives a step's ``source`` (harbor RFC 0001, "Agent Trajectory Interchange Format").
ATIF_SOURCES = ("system", "user", "agent")


def _atif_ok(docs: list, rel: str, problems: list[InputError]) -> bool:
    """Each ATIF trajectory of the file holds what v1.7 requires of the fields the store reads:
    an ``agent`` object with a ``name``, a ``steps`` list of objects, each with an integer
    ``step_id`` (1-based) and a ``source`` among system, user, agent. agentpile reads what it is
    given: a step source "robot" became an action ROBOT, and ``steps`` of text a traceback."""
    before = len(problems)
    for doc, line in docs:
        for n, trajectory in _trajectories(doc):
            where = (f"line {line}: " if line is not None else "") + (f"trajectory {n}: " if n else "")
            _atif_problems(trajectory, rel, where, problems)
            if len(problems) > before:
                return False
    return True


def _trajectories(doc: object) -> list[tuple[int | None, object]]:
    """The trajectories of one document (a list of them, or one) with their number in a list."""
    return list(enumerate(doc, 1)) if isinstance(doc, list) else [(None, doc)]


def _atif_problems(doc: object, rel: str, where: str, problems: list[InputError]) -> None:
    if not isinstance(doc, dict):
        problems.append(InputError(rel, None, f"{where}is a JSON {json_type(doc)}; an ATIF trajectory is an object."))
        return
    agent = doc.get("agent")
    if not isinstance(agent, dict) or not isinstance(agent.get("name"), str) or not agent["name"].strip():
        found = "is missing" if agent is None else f"is {show(agent)}"
        problems.append(InputError(rel, "agent", f"{where}{found}; ATIF v1.7 requires an agent object with a "
                                                 "name (and version)."))
        return
    steps = doc.get("steps")
    if not isinstance(steps, list):
        found = "is missing" if steps is None else f"is a JSON {json_type(steps)}"
        problems.append(InputError(rel, "steps", f"{where}{found}; ATIF v1.7 requires a list of step objects."))
        return
    for i, step in enumerate(steps):
        field = f"steps[{i}]"
        if not isinstance(step, dict):
            problems.append(InputError(rel, field, f"{where}is a JSON {json_type(step)}; an ATIF step is an object."))
            return
        step_id = step.get("step_id")
        if isinstance(step_id, bool) or not isinstance(step_id, int) or step_id < 1:
            found = "is missing" if step_id is None else f"is {show(step_id)}"
            problems.append(InputError(rel, f"{field}.step_id", f"{where}{found}; ATIF v1.7 numbers steps with "
                                                                "whole numbers from 1."))
            return
        if step.get("source") not in ATIF_SOURCES:
            found = "is missing" if "source" not in step else f"is {show(step.get('source'))}"
            problems.append(InputError(rel, f"{field}.source", f"{where}{found}; ATIF v1.7 allows "
                                                               f"{', '.join(ATIF_SOURCES)}."))
            return


def _detected(file: Path, rel: str, problems: list[InputError]) -> str | None:
    """The one format agentpile recognizes ``file`` as, or None after its sentence."""
    names = recognized(file)
    ours = {reader: fmt for fmt, reader in READERS.items()}
    if len(names) == 1 and names[0] in ours:
        return ours[names[0]]
    if not names:
        problems.append(InputError(rel, None, "is not a trajectory agentpile recognizes (ATIF, an OpenAI message "
                                              "list or a Claude Code session); name its format with "
                                              "`auditatlas ingest atif|messages|claude-code` to see what it lacks."))
    elif len(names) > 1:
        problems.append(InputError(rel, None, f"is recognized by several agentpile readers ({', '.join(names)}); "
                                              "name its format with `auditatlas ingest atif|messages|claude-code`."))
    elif names[0] == "otlp-json":
        problems.append(InputError(rel, None, "holds OpenTelemetry spans; read it with `auditatlas ingest otlp`."))
    else:
        problems.append(InputError(rel, None, f"is an agentpile '{names[0]}' record, which has no steps to audit."))
    return None


def _read_file(file: Path, rel: str, fmt: str, named: bool, problems: list[InputError],
               docs: list) -> list[Record]:
    """The run records of one file; a file the reader does not recognize is one sentence, an
    ATIF file that breaks v1.7 one sentence naming the field (``docs``: the file parsed)."""
    import agentpile

    if named and READERS[fmt] not in recognized(file):
        problems.append(InputError(rel, None, f"is not {WHAT[fmt]}; expected {NEEDS[fmt]}."))
        return []
    if fmt == "atif" and not _atif_ok(docs, rel, problems):
        return []
    records: list[Record] = []
    try:
        for run in agentpile.readers.get(READERS[fmt]).read(file):
            records.append(Record(rel, len(records) + 1, fmt, run))
    except agentpile.UnsupportedVersion as exc:
        problems.append(InputError(rel, None, f"record {len(records) + 1}: {first_line(exc)}."))
    except KeyError as exc:  # a later document without the member the first one had
        problems.append(InputError(rel, None, f"record {len(records) + 1} has no {exc.args[0]!r}; it is not "
                                              f"{WHAT[fmt]}."))
    except (TypeError, ValueError, AttributeError, IndexError) as exc:
        problems.append(InputError(rel, None, f"record {len(records) + 1} cannot be read as {WHAT[fmt]} "
                                              f"({first_line(exc)})."))
    return records
