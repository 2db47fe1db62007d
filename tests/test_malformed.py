"""Bad input: one sentence each, nothing lost.

A corpus of malformed inputs is GENERATED here (nothing binary is committed): release files of
every format, each broken in one way, written to tmp_path from the authored fixtures. Every case
runs the real command line, ``auditatlas.cli.main`` (a few also as ``python -m auditatlas.cli``
in a subprocess), against a store that already holds a loaded source of every format, and
asserts what the design promises of an error a user can cause:

- a non-zero exit;
- exactly one problem line, naming the file (and the field, where the case breaks one);
- no traceback;
- the store unchanged: MANIFEST.json byte for byte, and every file of every source folder.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from auditatlas.cli import main
from auditatlas.ingest import ingest
from auditatlas.store import MANIFEST
from conftest import REPO
from queries import connect

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MAAD_DIR = FIXTURES / "maadbench"
MAAD_FILE = (MAAD_DIR / "run_20260415_141200_livecodebench_no_tool_gpt-4.1_0.0"
             / "20260415141233_EscapeRoom_room_0002_escaped.json")
WHOWHEN_DIR = FIXTURES / "whowhen"
WHOWHEN_FILE = WHOWHEN_DIR / "Hand-Crafted" / "7.json"
TAU_DIR = FIXTURES / "taubench"
TAU_FILE = TAU_DIR / "mini-model-retail.json"

CATCH_PRE = ("pre", "mcp.json")
CATCH_JUDGE = ("pre", "llm_judge_method", "judge-x.json")
CATCH_CACHE = ("llm_judge", "whoandwhen__all_at_once__judge-x.json")
RAW = "__raw_json_here__"  # a value json.dumps cannot write is spliced into the text here
SUMMARY = re.compile(r"^error: \d+ problem\(s\); the store was left unchanged\.$")
BOM = b"\xef\xbb\xbf"


# =============================================================================================
# Building inputs


def json_text(doc: Any, raw: str | None = None) -> str:
    """``doc`` as JSON (NaN and Infinity written as the literals Python's json reads)."""
    text = json.dumps(doc)
    return text.replace(json.dumps(RAW), raw) if raw is not None else text


def mutated(doc: Any, path: tuple, value: Any) -> Any:
    """A deep copy of ``doc`` with the value at ``path`` replaced (``...`` deletes the key)."""
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def catchbench_documents() -> dict[tuple[str, ...], Any]:
    """A tiny release laid out like the package's data/: two PRE configs, their judge, one cache."""
    def caps() -> list[dict]:  # fresh objects per record, so a mutation breaks exactly one
        return [{"name": "read_file", "type": "fs", "permission_level": "read"},
                {"name": "send_email", "type": "mail", "permission_level": "network"}]

    records = [
        {"instance_id": "cfg-1", "source": "mcp", "declared_capabilities": caps(),
         "labels": {"excess_set": ["send_email"], "label_source": "llm_judge"}, "spec_tokens": ["read"]},
        {"instance_id": "cfg-2", "source": "synth_mcp", "declared_capabilities": caps()[:1],
         "labels": {"excess_set": [], "label_source": "synthetic_inject"}, "spec_tokens": []},
    ]
    cache = {"provenance": {"method": "all_at_once", "model": "judge-x"},
             "predictions": {"000-aaaaaaaaaaaa": {"top": 2, "ranking": [2, 0, 1], "raw": ""}}}
    return {CATCH_PRE: records, CATCH_JUDGE: {"cfg-1": ["read_file"]}, CATCH_CACHE: cache}


def catchbench_release(root: Path) -> Path:
    for where, doc in catchbench_documents().items():
        target = root.joinpath(*where)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc))
    return root


PRED_HEADER = "source_file,action_id,step_num,pred_score"


# =============================================================================================
# The corpus


@dataclass(frozen=True)
class Case:
    id: str
    fmt: str  # the ingest FORMAT, or "cli" for a bad command line
    write: Callable[[Path], list[str]]  # builds the input under a folder; returns the CLI arguments
    names: str  # what the error line must name: the bad file's name (or the CLI option)
    field: str | None = None  # the field the line must name ("field '<this...'"), if any
    says: str | None = None  # words the sentence must hold (case-insensitive)


def _file_case(case_id: str, fmt: str, where: tuple[str, ...], content: str | bytes,
               field: str | None = None, says: str | None = None, *, ingest_folder: bool = True,
               beside: Callable[[Path], None] | None = None, extra: tuple[str, ...] = ()) -> Case:
    """A case whose input is one file at ``where`` (inside a folder that is ingested whole)."""

    def write(folder: Path) -> list[str]:
        root = folder / "input"
        if beside is not None:
            beside(root)
        target = root.joinpath(*where)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8", errors="surrogatepass")
        return ["ingest", fmt, str(root if ingest_folder else target), *extra]

    return Case(case_id, fmt, write, where[-1], field, says)


# Where a bad file of each JSON format sits inside the ingested folder.
JSON_PLACES: dict[str, tuple[str, ...]] = {
    "maadbench": ("run_x", "bad.json"),
    "whowhen": ("Hand-Crafted", "bad.json"),
    "taubench": ("bad-model-airline.json",),
    "catchbench": CATCH_PRE,
}

# Broken in the same way whatever the format: (id, content, words the sentence holds).
FILE_LEVEL: list[tuple[str, str | bytes, str | None]] = [
    ("null", "null", "null"),
    ("empty", "", "empty"),
    ("blank", " \n\t\n", "empty"),
    ("truncated", '{"history": [1, 2', "not valid JSON"),
    ("deep-nesting", nested(100_000), "levels deep"),  # RecursionError in the parser
    ("deep-nesting-200", nested(200), "levels deep"),  # parses, but deeper than any release
    ("integer-5000-digits", '{"a": ' + "9" * 5000 + "}", "not valid JSON"),
    ("latin-1", '{"question": "café"}'.encode("latin-1"), "utf-8"),
    ("top-level-string", '"hello"', None),
    ("nan-literal-top", "NaN", None),
]


def _good_beside(fmt: str) -> Callable[[Path], None]:
    """Lay a good file of ``fmt`` next to the bad one (a bad file in a folder is never skipped)."""

    def lay(root: Path) -> None:
        if fmt == "maadbench":
            shutil.copytree(MAAD_FILE.parent, root / MAAD_FILE.parent.name)
        elif fmt == "whowhen":
            shutil.copytree(WHOWHEN_DIR, root, dirs_exist_ok=True)
        elif fmt == "taubench":
            shutil.copytree(TAU_DIR, root, dirs_exist_ok=True)
        else:
            catchbench_release(root)

    return lay


def file_level_cases() -> list[Case]:
    cases = []
    for fmt, where in JSON_PLACES.items():
        for case_id, content, says in FILE_LEVEL:
            if fmt == "maadbench" and case_id == "deep-nesting-200":
                continue  # a MAADBench trace that parses is read; too deep to parse is covered above
            cases.append(_file_case(f"{fmt}-{case_id}", fmt, where, content, None, says))
        # A null file beside good ones was once skipped without a word.
        cases.append(_file_case(f"{fmt}-null-beside-good-files", fmt, where, "null", None, "null",
                                beside=_good_beside(fmt)))
    return cases


def maadbench_cases() -> list[Case]:
    doc = json.loads(MAAD_FILE.read_text())
    tok = ("trace", 0, "call_statistic", "input_tokens")
    out = ("trace", 1, "call_statistic", "output_tokens")
    temp = ("config", "llm", "temperature")
    dur = ("trace", 0, "call_statistic", "duration")
    mutations: list[tuple[str, tuple, Any, str | None, str, str]] = [
        # id, path, value (RAW: spliced raw text), raw, field, words
        ("tokens-1e300", tok, 1e300, None, "trace[0].call_statistic.input_tokens", "count"),
        ("tokens-10**23", tok, 10**23, None, "trace[0].call_statistic.input_tokens", "count"),
        ("tokens-nan", tok, float("nan"), None, "trace[0].call_statistic.input_tokens", "count"),
        ("tokens-infinity", tok, float("inf"), None, "trace[0].call_statistic.input_tokens", "count"),
        ("tokens-negative", out, -5, None, "trace[1].call_statistic.output_tokens", "count"),
        ("tokens-fraction", tok, 12.5, None, "trace[0].call_statistic.input_tokens", "count"),
        ("tokens-string", tok, "12", None, "trace[0].call_statistic.input_tokens", "count"),
        ("tokens-1e400", tok, RAW, "1e400", "trace[0].call_statistic.input_tokens", "count"),
        ("temperature-nan", temp, float("nan"), None, "config.llm.temperature", "finite"),
        ("temperature-infinity", temp, float("inf"), None, "config.llm.temperature", "finite"),
        ("temperature-minus-infinity", temp, float("-inf"), None, "config.llm.temperature", "finite"),
        ("temperature-negative", temp, -0.5, None, "config.llm.temperature", "between 0 and 2"),
        ("temperature-above-2", temp, 2.5, None, "config.llm.temperature", "between 0 and 2"),
        ("temperature-huge-int", temp, RAW, "9" * 400, "config.llm.temperature", "finite"),
        ("temperature-string", temp, "hot", None, "config.llm.temperature", "number"),
        ("duration-negative", dur, -1, None, "trace[0].call_statistic.duration", "at least 0"),
        ("duration-nan", dur, float("nan"), None, "trace[0].call_statistic.duration", "finite"),
        ("confidence-nan", ("trace", 0, "confidence"), float("nan"), None, "trace[0].confidence", "finite"),
        ("action-number", ("trace", 0, "action"), 7, None, "trace[0].action", "must be a string"),
        ("action-list", ("trace", 0, "action"), ["SOLVE_CLUE"], None, "trace[0].action", "must be a string"),
        ("action-missing", ("trace", 0, "action"), ..., None, "trace[0].action", "missing"),
        ("agent-lone-surrogate", ("trace", 1, "agent"), "a\ud800b", None, "trace[1].agent", "surrogate"),
        ("key-lone-surrogate", ("trace", 0, "call_statistic"), {"\udc00": 1}, None, "trace[0].call_statistic",
         "surrogate"),
        ("escaped-string", ("escaped",), "yes", None, "escaped", "true or false"),
        ("trace-object", ("trace",), {"0": {}}, None, "trace", "list"),
        ("config-list", ("config",), [], None, "config", "object"),
        ("trace-missing", ("trace",), ..., None, "trace", "missing"),
        ("deep-inside-a-field", ("trace", 0, "output_structured"), RAW, nested(990), None, "levels deep"),
    ]
    cases = []
    for case_id, path, value, raw, field, says in mutations:
        text = json_text(mutated(doc, path, value), raw)
        cases.append(_file_case(f"maadbench-{case_id}", "maadbench", ("run_x", f"{case_id}.json"), text, field, says))
    return cases


def whowhen_cases() -> list[Case]:
    doc = json.loads(WHOWHEN_FILE.read_text())
    mutations: list[tuple[str, tuple, Any, str | None, str | None, str]] = [
        ("content-lone-surrogate", ("history", 1, "content"), "x\ud800y", None, "history[1].content", "surrogate"),
        ("question-lone-surrogate", ("question",), "\udfff", None, "question", "surrogate"),
        ("deep-question", ("question",), RAW, nested(150), "question[0][0]", "levels deep"),
        ("mistake-step-negative", ("mistake_step",), -1, None, "mistake_step", "outside"),
        ("mistake-step-20-digits", ("mistake_step",), "99999999999999999999", None, "mistake_step", "outside"),
        ("mistake-step-fraction", ("mistake_step",), 1.5, None, "mistake_step", "whole number"),
        ("mistake-step-nan", ("mistake_step",), float("nan"), None, "mistake_step", "whole number"),
        ("mistake-step-missing", ("mistake_step",), ..., None, "mistake_step", "missing"),
        ("history-empty", ("history",), [], None, "history", "empty"),
        ("history-entry-number", ("history", 0), 7, None, "history[0]", "object"),
        ("content-number", ("history", 0, "content"), 7, None, "history[0].content", "string"),
        ("outcome-maybe", ("is_corrected",), "maybe", None, "is_corrected", "true or false"),
        ("question-id-null", ("question_ID",), None, None, "question_ID", "string id"),
    ]
    return [_file_case(f"whowhen-{case_id}", "whowhen", ("Hand-Crafted", f"{case_id}.json"),
                       json_text(mutated(doc, path, value), raw), field, says)
            for case_id, path, value, raw, field, says in mutations]


def taubench_cases() -> list[Case]:
    runs = json.loads(TAU_FILE.read_text())
    mutations: list[tuple[str, tuple, Any, str | None, str | None, str]] = [
        ("trial-negative", (0, "trial"), -1, None, "[0].trial", ">= 0"),
        ("task-id-negative", (0, "task_id"), -3, None, "[0].task_id", ">= 0"),
        ("trial-fraction", (0, "trial"), 1.5, None, "[0].trial", "whole number"),
        ("trial-10**20", (0, "trial"), 10**20, None, "[0].trial", "whole number"),
        ("trial-nan", (1, "trial"), float("nan"), None, "[1].trial", "whole number"),
        ("reward-nan", (0, "reward"), float("nan"), None, "[0].reward", "0.0"),
        ("reward-400-digits", (0, "reward"), RAW, "1" + "0" * 400, "[0].reward", "0.0"),
        ("reward-half", (0, "reward"), 0.5, None, "[0].reward", "0.0"),
        ("role-unknown", (0, "traj", 1, "role"), "robot", None, "[0].traj[1].role", "one of"),
        ("content-lone-surrogate", (0, "traj", 1, "content"), "\ud83d", None, "[0].traj[1].content", "surrogate"),
        ("tool-call-id-orphan", (0, "traj", 3, "tool_call_id"), "call_nowhere", None, "[0].traj[3].tool_call_id",
         "no earlier"),
        ("traj-string", (0, "traj"), "hello", None, "[0].traj", "list"),
        ("deep-info", (0, "info"), RAW, nested(150), "[0].info[0]", "levels deep"),
    ]
    cases = [_file_case(f"taubench-{case_id}", "taubench", (f"{case_id}-airline.json",),
                        json_text(mutated(runs, path, value), raw), field, says)
             for case_id, path, value, raw, field, says in mutations]
    cases.append(_file_case("taubench-empty-list", "taubench", ("empty-airline.json",), "[]", None, "empty list"))
    return cases


def catchbench_cases() -> list[Case]:
    def with_file(where: tuple[str, ...], change: Callable[[Any], Any]) -> str:
        return json_text(change(catchbench_documents()[where]))

    mutations: list[tuple[str, tuple[str, ...], str, str | None, str]] = [
        ("capability-type-number", CATCH_PRE,
         with_file(CATCH_PRE, lambda d: mutated(d, (0, "declared_capabilities", 0, "type"), 7)),
         "declared_capabilities[0].type", "string"),
        ("excess-set-numbers", CATCH_PRE,
         with_file(CATCH_PRE, lambda d: mutated(d, (0, "labels", "excess_set"), [1])), "labels.excess_set", "names"),
        ("instance-id-missing", CATCH_PRE,
         with_file(CATCH_PRE, lambda d: mutated(d, (1, "instance_id"), ...)), "instance_id", "instance_id"),
        ("capability-name-lone-surrogate", CATCH_PRE,
         with_file(CATCH_PRE, lambda d: mutated(d, (0, "declared_capabilities", 1, "name"), "send\udc80")),
         "[0].declared_capabilities[1].name", "surrogate"),
        ("judge-needs-objects", CATCH_JUDGE, json.dumps({"cfg-1": [{"name": "read_file"}]}), None, "map"),
        ("judge-cache-top-negative", CATCH_CACHE,
         with_file(CATCH_CACHE, lambda d: mutated(d, ("predictions", "000-aaaaaaaaaaaa", "top"), -1)),
         "predictions.000-aaaaaaaaaaaa.top", "step index"),
        ("judge-cache-top-10**20", CATCH_CACHE,
         with_file(CATCH_CACHE, lambda d: mutated(d, ("predictions", "000-aaaaaaaaaaaa", "top"), 10**20)),
         "predictions.000-aaaaaaaaaaaa.top", "step index"),
        ("judge-cache-top-fraction", CATCH_CACHE,
         with_file(CATCH_CACHE, lambda d: mutated(d, ("predictions", "000-aaaaaaaaaaaa", "top"), 1.5)),
         "predictions.000-aaaaaaaaaaaa.top", "step index"),
        ("judge-cache-ranking-text", CATCH_CACHE,
         with_file(CATCH_CACHE, lambda d: mutated(d, ("predictions", "000-aaaaaaaaaaaa", "ranking"), ["a"])),
         "predictions.000-aaaaaaaaaaaa.ranking", "step indices"),
        ("judge-cache-null", CATCH_CACHE, "null", None, "null"),
    ]
    cases = []
    for case_id, where, text, field, says in mutations:
        # The rest of the release stays good, so the one bad file is the only problem.
        cases.append(_file_case(f"catchbench-{case_id}", "catchbench", where, text, field, says,
                                beside=catchbench_release))
    cases.append(_file_case("catchbench-board-latin-1", "catchbench", ("golden", "board.txt"),
                            "[PRE] t :: café".encode("latin-1"), None, "cannot be read", beside=catchbench_release))

    def empty_release(folder: Path) -> list[str]:
        (folder / "release" / "pre").mkdir(parents=True)
        return ["ingest", "catchbench", str(folder / "release")]

    cases.append(Case("catchbench-folder-without-data", "catchbench", empty_release, "release", None,
                      "holds no CatchBench data"))
    return cases


def predictions_cases() -> list[Case]:
    def csv_case(case_id: str, body: str | bytes, field: str | None, says: str, *, name: str | None = None,
                 extra: tuple[str, ...] = (), where: tuple[str, ...] = ()) -> Case:
        file = name or f"{case_id}.csv"
        return _file_case(f"predictions-{case_id}", "predictions", (*where, file), body, field, says,
                          ingest_folder=False, extra=extra)

    row = "run_x/a.json,room_0002_P1_OBSERVE_CLUE_1"
    rows = lambda *lines: "\n".join([PRED_HEADER, *lines]) + "\n"  # noqa: E731
    return [
        csv_case("ragged-rows", rows(f"{row},0,0.5", f"{row},1,0.5,extra,more", f"{row}"), None, "fields but the header"),
        csv_case("field-10-mb", rows(f"run_x/a.json,{'x' * 10_000_000},0,0.5"), None, "longer than"),
        csv_case("quote-left-open", rows(f'{row},"0,0.5', f"{row},1,0.5"), None, "quote"),
        csv_case("nul-byte", rows("run_x/a.json,room\x00id,0,0.5"), None, "NUL"),
        csv_case("latin-1", rows(f"{row},0,0.5", "café.json,x,1,0.5").encode("latin-1"), None, "utf-8"),
        csv_case("json-not-csv", '[{"source_file": "a.json", "pred_score": 0.5}]', None, "holds JSON"),
        csv_case("tab-separated", PRED_HEADER.replace(",", "\t") + f"\n{row.replace(',', chr(9))}\t0\t0.5\n",
                 None, "comma-separated"),
        csv_case("header-only", PRED_HEADER + "\n", None, "no rows"),
        csv_case("empty", "", None, "empty"),
        csv_case("blank-header", "\n\n" + f"{row},0,0.5\n", None, "header"),
        csv_case("step-num-nan", rows(f"{row},nan,0.5"), "step_num", "step position"),
        csv_case("step-num-1e20", rows(f"{row},1e20,0.5"), "step_num", "step position"),
        csv_case("step-num-negative", rows(f"{row},-1,0.5"), "step_num", "step position"),
        csv_case("step-num-fraction", rows(f"{row},1.5,0.5"), "step_num", "step position"),
        csv_case("step-num-infinity", rows(f"{row},inf,0.5"), "step_num", "step position"),
        csv_case("score-nan", rows(f"{row},0,nan"), "pred_score", "not a number"),
        csv_case("score-infinity", rows(f"{row},0,-inf"), "pred_score", "not a number"),
        csv_case("score-text", rows(f"{row},0,high"), "pred_score", "not a number"),
        csv_case("label-two", PRED_HEADER + ",pred_label\n" + f"{row},0,0.5,2\n", "pred_label", "0 or 1"),
        csv_case("gt-label-text", PRED_HEADER + ",gt_label\n" + f"{row},0,0.5,yes\n", "gt_label", "0 or 1"),
        csv_case("missing-action-id", "source_file,step_num,pred_score\nrun_x/a.json,0,0.5\n", "action_id", "missing"),
        csv_case("no-score-column", "source_file,action_id,step_num\n" + f"{row},0\n", "pred_score", "score column"),
        csv_case("rows-match-no-step", rows("nowhere/z.json,nothing,0,0.5"), "source_file", "match"),
        csv_case("seed-option-negative", rows(f"{row},0,0.5"), "seed", "2**63", extra=("--seed", "-1")),
        csv_case("seed-folder-beyond-int64", rows(f"{row},0,0.5"), "seed", "2**63", name="predictions.csv",
                 where=("xgboost", "seed_99999999999999999999")),
    ]


def cli_cases() -> list[Case]:
    def argv(*args: str) -> Callable[[Path], list[str]]:
        return lambda folder: [*args]

    def missing(folder: Path) -> list[str]:
        return ["ingest", "whowhen", str(folder / "no-such-folder")]

    return [
        Case("cli-demo-seed-negative", "cli", argv("demo", "--seed", "-1", "--rooms", "2"), "--seed", None, ">= 0"),
        Case("cli-demo-seed-text", "cli", argv("demo", "--seed", "abc", "--rooms", "2"), "--seed", None,
             "whole number"),
        Case("cli-demo-seed-fraction", "cli", argv("demo", "--seed", "1.5", "--rooms", "2"), "--seed", None,
             "whole number"),
        Case("cli-demo-rooms-zero", "cli", argv("demo", "--rooms", "0"), "--rooms", None, "at least 1"),
        Case("cli-ingest-unknown-format", "cli", argv("ingest", "parquet", "x"), "FORMAT", None, "invalid choice"),
        Case("cli-ingest-without-path", "cli", argv("ingest", "whowhen"), "whowhen", None, "needs a PATH"),
        Case("cli-ingest-missing-path", "cli", missing, "no-such-folder", None, "no such file"),
        Case("cli-ingest-seed-text", "cli", argv("ingest", "predictions", "x.csv", "--seed", "x"), "--seed", None,
             "invalid int"),
    ]


CASES: list[Case] = (file_level_cases() + maadbench_cases() + whowhen_cases() + taubench_cases()
                     + catchbench_cases() + predictions_cases() + cli_cases())


# =============================================================================================
# The store every case must leave alone


@pytest.fixture(scope="module")
def loaded_store(tmp_path_factory) -> Path:
    """A store holding a loaded source of every format (so a bad ingest has something to wipe)."""
    work = tmp_path_factory.mktemp("malformed")
    root = work / "store"
    ingest("maadbench", MAAD_DIR, root)
    ingest("whowhen", WHOWHEN_DIR, root)
    ingest("taubench", TAU_DIR, root)
    ingest("catchbench", catchbench_release(work / "catchbench"), root)
    steps = connect(root).execute(
        """SELECT r.source_file, s.step_id, s.step_idx FROM steps s JOIN runs r USING (run_id)
           WHERE r.corpus = 'maadbench' AND s.step_id IS NOT NULL ORDER BY 1, 3 LIMIT 6""").fetchall()
    good = work / "good.csv"
    good.write_text("\n".join([PRED_HEADER, *(f"{f},{sid},{idx},{idx / 10}" for f, sid, idx in steps)]) + "\n")
    ingest("predictions", good, root)
    return root


def snapshot(root: Path) -> tuple[bytes, dict[str, str]]:
    """MANIFEST.json's bytes and a digest of every file of every source folder it names."""
    manifest = (root / MANIFEST).read_bytes()
    digests = {}
    for entry in json.loads(manifest)["sources"].values():
        for file in sorted((root / entry["dir"]).rglob("*")):
            if file.is_file():
                digests[file.relative_to(root).as_posix()] = hashlib.sha256(file.read_bytes()).hexdigest()
    return manifest, digests


@pytest.fixture
def store(loaded_store, tmp_path) -> Path:
    copy_ = tmp_path / "store"
    shutil.copytree(loaded_store, copy_)
    return copy_


def test_the_loaded_store_holds_every_format(loaded_store):
    sources = set(json.loads((loaded_store / MANIFEST).read_text())["sources"])
    assert {"maadbench", "whowhen", "taubench", "catchbench", "predictions-good"} <= sources


def test_the_corpus_is_large_and_covers_every_format():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)
    per_format = {fmt: sum(c.fmt == fmt for c in CASES) for fmt in
                  ("maadbench", "whowhen", "taubench", "catchbench", "predictions", "cli")}
    assert min(per_format.values()) >= 8, per_format


# =============================================================================================
# Running a case


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """``auditatlas`` in this process; argparse's exit becomes a code. Any other exception
    propagates and fails the test with its traceback, which is exactly what must not happen."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def check_message(case: Case, code: int, out: str, err: str) -> str:
    text = out + err
    assert code not in (0, None), f"exit {code}: {text[-500:]}"
    assert "Traceback" not in text, text[-2000:]
    lines = [line for line in err.splitlines() if "error:" in line and not SUMMARY.match(line)]
    assert len(lines) == 1, err[-2000:]
    line = lines[0]
    assert len(line) < 600, line[:600]
    assert case.names in line, line
    if case.field is not None:
        assert f"field '{case.field}" in line, line
    if case.says is not None:
        assert case.says.lower() in line.lower(), line
    return line


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_input_is_one_sentence_and_changes_nothing(case: Case, store: Path, tmp_path, capsys):
    argv = case.write(tmp_path / "case")
    before = snapshot(store)
    code, out, err = run_cli(["--store", str(store), *argv], capsys)
    check_message(case, code, out, err)
    assert snapshot(store) == before


# Through the real entry point in a fresh interpreter, the cases where a real process can differ
# from the in-process run above (which covers every case): text the real stderr must encode (a
# lone surrogate), the real interpreter's recursion limit and stack (deep nesting), argparse's
# own exit (a bad option value), and a refused file beside good ones (nothing written).
SUBPROCESS_CASES = ["whowhen-null-beside-good-files", "maadbench-deep-nesting", "whowhen-content-lone-surrogate",
                    "cli-demo-seed-negative"]


@pytest.mark.parametrize("case_id", SUBPROCESS_CASES)
def test_the_installed_command_line_answers_the_same(case_id: str, store: Path, tmp_path):
    case = next(c for c in CASES if c.id == case_id)
    argv = case.write(tmp_path / "case")
    before = snapshot(store)
    done = subprocess.run([sys.executable, "-m", "auditatlas.cli", "--store", str(store), *argv],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    check_message(case, done.returncode, done.stdout, done.stderr)
    assert snapshot(store) == before


# =============================================================================================
# What is accepted rather than refused


@pytest.mark.parametrize("fmt, where, good", [
    ("maadbench", ("run_x", MAAD_FILE.name), MAAD_FILE),
    ("whowhen", ("Hand-Crafted", "7.json"), WHOWHEN_FILE),
    ("taubench", (TAU_FILE.name,), TAU_FILE),
])
def test_a_utf8_byte_order_mark_is_accepted_in_json(fmt, where, good, store, tmp_path, capsys):
    """Both readers accept a BOM: JSON like CSV (DuckDB skips it), so a file saved by a Windows
    editor reads the same as the original."""
    target = (tmp_path / "input").joinpath(*where)
    target.parent.mkdir(parents=True)
    target.write_bytes(BOM + good.read_bytes())
    code, out, err = run_cli(["--store", str(store), "ingest", fmt, str(tmp_path / "input")], capsys)
    assert code == 0, err
    assert "ingested" in out


def test_a_utf8_byte_order_mark_is_accepted_in_catchbench_json(store, tmp_path, capsys):
    release = catchbench_release(tmp_path / "release")
    for file in release.rglob("*.json"):
        file.write_bytes(BOM + file.read_bytes())
    code, out, err = run_cli(["--store", str(store), "ingest", "catchbench", str(release)], capsys)
    assert code == 0, err


def test_a_utf8_byte_order_mark_is_accepted_in_csv(store, tmp_path, capsys):
    steps = connect(store).execute(
        """SELECT r.source_file, s.step_id, s.step_idx FROM steps s JOIN runs r USING (run_id)
           WHERE r.corpus = 'maadbench' AND s.step_id IS NOT NULL ORDER BY 1, 3 LIMIT 2""").fetchall()
    csv = tmp_path / "bom.csv"
    csv.write_bytes(BOM + ("\n".join([PRED_HEADER, *(f"{f},{s},{i},0.5" for f, s, i in steps)]) + "\n").encode())
    code, out, err = run_cli(["--store", str(store), "ingest", "predictions", str(csv)], capsys)
    assert code == 0, err
    assert "2 predictions" in out


def test_whole_number_floats_are_counts(store, tmp_path, capsys):
    """812.0 tokens is a count (some exporters write floats); only fractions, NaN and the
    out-of-range are refused."""
    doc = mutated(json.loads(MAAD_FILE.read_text()), ("trace", 0, "call_statistic", "input_tokens"), 812.0)
    target = tmp_path / "input" / "run_x" / MAAD_FILE.name
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(doc))
    code, out, err = run_cli(["--store", str(store), "ingest", "maadbench", str(tmp_path / "input")], capsys)
    assert code == 0, err
    tokens = connect(store).execute(
        "SELECT tokens_in FROM steps WHERE corpus = 'maadbench' AND step_idx = 0").fetchall()
    assert tokens == [(812,)]
