"""MAADBench importer: authored fixtures with hand-counted expectations.

Fixtures (tests/fixtures/maadbench, runner layout; counts below were counted by hand from
the files, not computed with the importer):

- A ``run_..._gsm-hard_tool_claude-opus-4-8_0.3/..._room_0007_failed.json``: medium, 2 puzzles,
  13 steps (3 tool calls). P1 solved; on P2 SOLVE_CLUE fails (fm 4.2), then a tool call and
  APPLY_DELTA (fm "4.3") fail downstream: 3 anomalies, a cascade.
- E same folder ``..._room_0008_failed.json``: a hard room that crashed before any action
  (empty trace). The folder also holds summary.csv and run.log, which must be ignored.
- B ``run_..._livecodebench_no_tool_gpt-4.1_0.0/..._room_0002_escaped.json``: easy, 5 steps,
  OBSERVE_PUZZLE with schema errors and no verification: 1 format anomaly.
- C ``run_..._deepseek-reasoner_0.6_nightmare_seed7/..._room_0012_failed.json``: nightmare,
  13 steps, P1 and P2 solved (a wrong tool call on P2 the agent recovered from), then a
  SELECT_PUZZLE of the locked P4 with no verification (unlabeled).
- D ``claude-sonnet-4-20250514/gsm-hard/run_.../..._room_0003_failed.json``: legacy v2
  (message/structured, ids like P1_OBSERVE_CLUE, no puzzle_id), 5 steps, 2 anomalies.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from auditatlas.errors import IngestFailed
from auditatlas.ingest import Context, ingest, maadbench
from auditatlas.store import read_manifest, write_source

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = FIXTURES / "maadbench"
BROKEN = FIXTURES / "broken" / "maadbench"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

RUN_A = "run_20260412_093015_gsm-hard_tool_claude-opus-4-8_0.3/20260412093102_EscapeRoom_room_0007_failed"
RUN_E = "run_20260412_093015_gsm-hard_tool_claude-opus-4-8_0.3/20260412093540_EscapeRoom_room_0008_failed"
RUN_B = "run_20260415_141200_livecodebench_no_tool_gpt-4.1_0.0/20260415141233_EscapeRoom_room_0002_escaped"
RUN_C = ("run_20260420_080000_gsm-hard_tool_deepseek-reasoner_0.6_nightmare_seed7/"
         "20260420080412_EscapeRoom_room_0012_failed")
RUN_D = ("claude-sonnet-4-20250514/gsm-hard/run_20250610_101500_gsm-hard_claude-sonnet-4-20250514_0.0/"
         "20250610101544_EscapeRoom_room_0003_failed")


def _read(path: Path, tmp_path: Path, **kw):
    return maadbench.read(path, Context(store=tmp_path / "store"), **kw)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    return maadbench.read(ROOT, Context(store=tmp_path_factory.mktemp("store")))


def _rows(batch, table: str) -> list[dict]:
    return batch.tables[table].to_pylist()


def _steps(batch, rel: str) -> list[dict]:
    run_id = f"maadbench:{rel}"
    return sorted((s for s in _rows(batch, "steps") if s["run_id"] == run_id), key=lambda s: s["step_idx"])


def _edges(batch, rel: str) -> set[tuple[int, int, str, str]]:
    run_id = f"maadbench:{rel}"
    return {(e["src_idx"], e["dst_idx"], e["kind"], e["provenance"]) for e in _rows(batch, "edges") if e["run_id"] == run_id}


# ------------------------------------------------------------------------------- counts

# rel -> (steps, labeled, anomalies, unlabeled, format errors, data edges, tool_parent, sequence)
EXPECTED = {
    RUN_A: (13, 13, 3, 0, 0, 15, 3, 1),
    RUN_E: (0, 0, 0, 0, 0, 0, 0, 0),
    RUN_B: (5, 5, 1, 0, 1, 6, 0, 0),
    RUN_C: (13, 12, 1, 1, 0, 10, 2, 2),
    RUN_D: (5, 5, 2, 0, 0, 6, 0, 0),
}


@pytest.mark.parametrize("rel", list(EXPECTED))
def test_counts_per_fixture(batch, rel):
    steps = _steps(batch, rel)
    edges = _edges(batch, rel)
    n, labeled, anomalies, unlabeled, fmt, data, tool_parent, sequence = EXPECTED[rel]
    assert len(steps) == n
    assert sum(s["label"] is not None for s in steps) == labeled
    assert sum(s["label"] == 1 for s in steps) == anomalies
    assert sum(s["label"] is None for s in steps) == unlabeled
    assert sum(bool(s["is_format_error"]) for s in steps) == fmt
    assert sum(e[2] == "data" for e in edges) == data
    assert sum(e[2] == "tool_parent" for e in edges) == tool_parent
    assert sum(e[2] == "puzzle_sequence" for e in edges) == sequence
    run = next(r for r in _rows(batch, "runs") if r["run_id"] == f"maadbench:{rel}")
    assert run["n_steps"] == n


def test_whole_folder_counts_and_side_files_ignored(batch):
    assert len(_rows(batch, "runs")) == 5  # summary.csv and run.log are not runs
    steps = _rows(batch, "steps")
    assert len(steps) == 36
    assert sum(s["label"] == 1 for s in steps) == 7
    assert sum(s["label"] == 0 for s in steps) == 28
    assert sum(s["label"] is None for s in steps) == 1
    assert len(_rows(batch, "edges")) == 45
    assert batch.source == "maadbench"
    assert batch.meta["files"] == 5


# ------------------------------------------------------------------------------- runs


def test_run_fields(batch):
    runs = {r["run_id"]: r for r in _rows(batch, "runs")}
    a = runs[f"maadbench:{RUN_A}"]
    assert a["source_file"] == RUN_A + ".json"
    assert (a["backbone"], a["temperature"], a["domain"], a["difficulty"]) == ("Claude Opus 4.8", 0.3, "gsm-hard", "medium")
    assert (a["task_id"], a["room_id"], a["outcome"], a["label_process"]) == (
        "gsm-hard_tool", "room_0007", "failure", "deterministic verifier")
    extra = json.loads(a["extra"])
    assert (extra["puzzles_solved"], extra["puzzles_total"], extra["timing_sec"], extra["seed"]) == (1, 2, 71.4, None)

    b = runs[f"maadbench:{RUN_B}"]
    assert (b["domain"], b["task_id"], b["outcome"], b["difficulty"]) == ("livecodebench", "livecodebench_no_tool", "success", "easy")

    c = runs[f"maadbench:{RUN_C}"]
    assert (c["difficulty"], c["room_id"], c["temperature"]) == ("nightmare", "room_0012", 0.6)
    assert json.loads(c["extra"])["seed"] == 7

    d = runs[f"maadbench:{RUN_D}"]
    assert d["task_id"] == "gsm-hard"  # no tool mode in a v2 config: not guessed from folder names
    assert json.loads(d["extra"])["trace_format"] == "v2"

    e = runs[f"maadbench:{RUN_E}"]
    assert (e["n_steps"], e["difficulty"], e["outcome"]) == (0, "hard", "failure")
    assert "APITimeoutError" in json.loads(e["extra"])["failure_report_error"]


def test_backbone_normalisation(batch):
    assert {r["backbone"] for r in _rows(batch, "runs")} == {
        "Claude Opus 4.8", "GPT-4.1", "DeepSeek-R1", "claude-sonnet-4-20250514"}
    expected = {
        "claude-opus-4-8": "Claude Opus 4.8",
        "claude-sonnet-4-6": "Claude Sonnet 4.6",
        "deepseek-reasoner": "DeepSeek-R1",
        "gpt-4.1": "GPT-4.1",
        "gpt-5.4": "GPT-5.4",
        "anthropic/claude-sonnet-4-6": "Claude Sonnet 4.6",
        "claude-sonnet-4-20250514": "claude-sonnet-4-20250514",
        "some/unknown-model": "some/unknown-model",
    }
    for model, name in expected.items():
        assert maadbench.normalise_backbone(model) == name
    assert maadbench.normalise_backbone(None) is None


# ------------------------------------------------------------------------------- steps


def test_cascade_flag_and_failure_modes(batch):
    steps = _steps(batch, RUN_A)
    assert [s["is_cascade"] for s in steps] == [False] * 8 + [True] * 5
    assert {s["step_idx"]: s["failure_mode"] for s in steps if s["failure_mode"]} == {
        7: "FM-4.2",  # kept from fm_id
        9: "FM-5",    # tool call after the failed SOLVE_CLUE: derived cascade
        11: "FM-5",   # fm_id "4.3" shown as FM-5
    }
    assert {s["step_idx"]: s["error_code"] for s in steps if s["error_code"]} == {
        7: "math_unit_wrong", 9: "TC_WRONG_ARGUMENTS", 11: "apply_delta_wrong"}
    legacy = _steps(batch, RUN_D)
    assert [s["is_cascade"] for s in legacy] == [False, False, False, True, True]
    assert [s["failure_mode"] for s in legacy] == [None, None, "FM-4.1", "FM-5", None]
    # A wrong tool call with no earlier failure on its puzzle is not a cascade.
    nightmare = _steps(batch, RUN_C)
    assert nightmare[10]["label"] == 1 and nightmare[10]["failure_mode"] is None
    assert nightmare[11]["is_cascade"] is True and nightmare[11]["label"] == 0


def test_scope_success(batch):
    a = _steps(batch, RUN_A)
    assert [(s["scope"], s["scope_success"]) for s in a] == [("P1", True)] * 6 + [("P2", False)] * 7
    c = _steps(batch, RUN_C)
    assert [(s["scope"], s["scope_success"]) for s in c] == [("P1", True)] * 6 + [("P2", True)] * 6 + [("P4", False)]
    assert {(s["scope"], s["scope_success"]) for s in _steps(batch, RUN_D)} == {("P1", False)}
    assert {(s["scope"], s["scope_success"]) for s in _steps(batch, RUN_B)} == {("P1", True)}


def _nightmare_variant(tmp_path: Path, mutate) -> list[dict]:
    doc = json.loads((ROOT / f"{RUN_C}.json").read_text())
    mutate(doc["room"])
    folder = tmp_path / "variant"
    folder.mkdir()
    (folder / "room.json").write_text(json.dumps(doc))
    steps = _read(folder, tmp_path).tables["steps"].to_pylist()
    return sorted(steps, key=lambda s: s["step_idx"])


def test_nightmare_scope_success_from_solved_ids(tmp_path):
    def drop_solved_flags(room):
        for puzzle in room["puzzles"]:
            puzzle.pop("solved")

    steps = _nightmare_variant(tmp_path, drop_solved_flags)
    assert [s["scope_success"] for s in steps] == [True] * 12 + [False]


def test_nightmare_scope_success_through_dag_ids(tmp_path):
    def dag_ids_only(room):
        for puzzle in room["puzzles"]:
            puzzle.pop("solved")
        room["solved_ids"] = ["P_scale"]  # DAG id of P1 (item type "scale")

    steps = _nightmare_variant(tmp_path, dag_ids_only)
    assert [s["scope_success"] for s in steps] == [True] * 6 + [False] * 7


def test_nightmare_actions_and_unlabeled_select(batch):
    steps = _steps(batch, RUN_C)
    assert [s["action"] for s in steps[:6]] == [
        "SELECT_PUZZLE", "OBSERVE_CLUE", "SOLVE_CLUE", "OBSERVE_ITEM", "UNIT_TOOL_CALL", "APPLY_DELTA"]
    assert json.loads(steps[1]["extra"])["original_action"] == "OBSERVE_PLANNED_CLUE"
    last = steps[12]
    assert (last["action"], last["agent"], last["label"], last["label_source"], last["is_format_error"]) == (
        "SELECT_PUZZLE", "planner", None, "unlabeled", False)
    assert last["step_id"] == "room_0012_P4_SELECT_PUZZLE_13"
    assert json.loads(last["extra"])["avail_at_select"] == ["P3"]


def test_format_error_step(batch):
    op = _steps(batch, RUN_B)[4]
    assert (op["action"], op["label"], op["is_format_error"], op["label_source"]) == (
        "OBSERVE_PUZZLE", 1, True, "schema_errors")
    assert json.loads(op["extra"])["schema_errors"] == {"solved": "required field missing"}
    others = _steps(batch, RUN_B)[:4]
    assert all(s["label_source"] == "verifier" and s["is_format_error"] is False for s in others)


def test_text_tokens_and_tool_fields(batch):
    steps = _steps(batch, RUN_A)
    solve = steps[1]
    assert (solve["tokens_in"], solve["tokens_out"], solve["duration_s"], solve["confidence"]) == (640, 412, 9.4, 0.88)
    assert solve["agent"] == "clue_solver" and solve["step_id"] == "room_0007_P1_SOLVE_CLUE_2"
    assert solve["text_in"].startswith("[clue_solver] Problem:")
    assert "180 x 15 s = 2700 s." in solve["text_out"]
    assert json.loads(solve["text_out"].splitlines()[-1]) == {"answer": 2700, "unit": "s"}
    tool = steps[3]
    assert tool["is_tool"] is True and tool["agent"] == "item_manager"
    assert (tool["tokens_in"], tool["confidence"]) == (None, None)
    assert json.loads(tool["text_in"])["available_tools"][0] == "convert_time"
    assert json.loads(tool["text_out"])["tool_name"] == "convert_time"
    assert json.loads(tool["extra"])["parent_action_id"] == "room_0007_P1_APPLY_DELTA_5"
    assert sum(s["is_tool"] for s in steps) == 3


def test_legacy_v2_entries(batch):
    steps = _steps(batch, RUN_D)
    assert [s["step_id"] for s in steps][:2] == ["P1_OBSERVE_CLUE", "P1_SOLVE_CLUE"]
    assert all(s["scope"] == "P1" for s in steps)  # recovered from the action id
    item = steps[2]
    assert item["text_in"] is None  # v2 stored no prompt; its message is the agent's output
    assert item["text_out"].startswith("The kitchen timer shows 5 min")
    assert '"item_type": "timer"' in item["text_out"]
    assert (item["tokens_in"], item["duration_s"], item["error_code"]) == (700, 2.4, "item_type_wrong")


# ------------------------------------------------------------------------------- edges


def test_edges_point_backwards(batch):
    edges = _rows(batch, "edges")
    assert edges and all(e["src_idx"] < e["dst_idx"] for e in edges)


def test_edges_of_the_cascade_room(batch):
    assert _edges(batch, RUN_A) == {
        # P1: OC0 SC1 OI2 TC3 AD4 OP5
        (0, 1, "data", "observed"), (1, 2, "data", "observed"), (2, 4, "data", "observed"),
        (2, 3, "data", "observed"), (3, 4, "tool_parent", "observed"),
        (0, 5, "data", "observed"), (2, 5, "data", "observed"), (4, 5, "data", "observed"),
        # P1 -> P2
        (5, 6, "puzzle_sequence", "modeled"),
        # P2: OC6 SC7 OI8 TC9 TC10 AD11 OP12
        (6, 7, "data", "observed"), (7, 8, "data", "observed"), (8, 11, "data", "observed"),
        (8, 9, "data", "observed"), (8, 10, "data", "observed"),
        (9, 11, "tool_parent", "observed"), (10, 11, "tool_parent", "observed"),
        (6, 12, "data", "observed"), (8, 12, "data", "observed"), (11, 12, "data", "observed"),
    }


def test_edges_of_the_nightmare_room(batch):
    edges = _edges(batch, RUN_C)
    assert (0, 1, "data", "observed") in edges and (6, 7, "data", "observed") in edges  # SELECT -> planned clue
    assert (5, 6, "puzzle_sequence", "modeled") in edges and (11, 12, "puzzle_sequence", "modeled") in edges
    assert {e for e in edges if e[2] == "tool_parent"} == {(4, 5, "tool_parent", "observed"), (10, 11, "tool_parent", "observed")}
    assert not any(e[1] == 12 and e[2] == "data" for e in edges)  # the lone locked pick reads nothing


def test_tool_parent_without_parent_id_is_inferred(tmp_path):
    doc = json.loads((ROOT / f"{RUN_A}.json").read_text())
    del doc["trace"][3]["parent_action_id"]
    folder = tmp_path / "variant"
    folder.mkdir()
    (folder / "room.json").write_text(json.dumps(doc))
    batch = _read(folder, tmp_path)
    edges = {(e["src_idx"], e["dst_idx"], e["kind"], e["provenance"]) for e in batch.tables["edges"].to_pylist()}
    assert (3, 4, "tool_parent", "inferred") in edges
    assert any("inferred" in note for note in batch.notes)


# ------------------------------------------------------------------------------- store


def test_round_trip_through_store_and_views(batch, tmp_path):
    from queries import connect

    write_source(tmp_path, batch.source, batch.tables)
    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 5
    assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == 36
    assert con.execute("SELECT count(*) FROM steps WHERE label = 1").fetchone()[0] == 7
    assert con.execute("SELECT count(*) FROM steps WHERE label IS NULL").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM edges").fetchone()[0] == 45
    assert con.execute("SELECT title, kind, label_process FROM corpora").fetchall() == [
        ("MAADBench", "real", "deterministic verifier")]
    by_backbone = dict(con.execute(
        "SELECT r.backbone, count(*) FROM steps s JOIN runs r USING (run_id) GROUP BY 1").fetchall())
    assert by_backbone == {"Claude Opus 4.8": 13, "GPT-4.1": 5, "DeepSeek-R1": 13, "claude-sonnet-4-20250514": 5}


def _counts(store: Path) -> dict[str, int]:
    from queries import connect

    con = connect(store)
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "steps", "edges", "corpora")}


def test_reingest_is_idempotent(tmp_path):
    store = tmp_path / "store"
    ingest("maadbench", ROOT, store)
    first = _counts(store)
    ingest("maadbench", ROOT, store)
    assert _counts(store) == first == {"runs": 5, "steps": 36, "edges": 45, "corpora": 1}


def test_simulated_corpus_naming(tmp_path):
    batch = _read(ROOT, tmp_path, corpus="maadbench-sim", kind="simulated", source="demo")
    assert batch.source == "demo"
    assert batch.tables["corpora"][0]["title"] == "MAADBench (simulated)"
    assert batch.tables["corpora"][0]["kind"] == "simulated"
    run_ids = batch.tables["runs"].column("run_id").to_pylist()
    assert f"maadbench-sim:{RUN_A}" in run_ids
    assert set(batch.tables["steps"].column("corpus").to_pylist()) == {"maadbench-sim"}
    assert set(batch.tables["edges"].column("corpus").to_pylist()) == {"maadbench-sim"}


def test_single_file(tmp_path):
    batch = _read(ROOT / f"{RUN_B}.json", tmp_path)
    runs = batch.tables["runs"].to_pylist()
    assert [r["run_id"] for r in runs] == ["maadbench:20260415141233_EscapeRoom_room_0002_escaped"]
    assert runs[0]["source_file"] == "20260415141233_EscapeRoom_room_0002_escaped.json"


def test_can_read():
    assert maadbench.can_read(ROOT)
    assert maadbench.can_read(ROOT / f"{RUN_C}.json")
    assert not maadbench.can_read(ROOT / RUN_A.split("/")[0] / "summary.csv")
    assert not maadbench.can_read(BROKEN / "not_maadbench.json")
    assert not maadbench.can_read(BROKEN / "malformed.json")
    assert not maadbench.can_read(FIXTURES / "whowhen")


# ------------------------------------------------------------------------------- bad input

BROKEN_CASES = {
    "malformed.json": (None, "not valid JSON"),
    "empty.json": (None, "is empty"),
    "top_level_list.json": (None, "top level is a JSON array"),
    "missing_trace.json": ("trace", "is missing"),
    "not_maadbench.json": ("config", "is missing"),
    "trace_not_list.json": ("trace", "must be a list"),
    "escaped_not_bool.json": ("escaped", "must be true or false"),
    "entry_without_action.json": ("trace[2].action", "is missing"),
    "temperature_not_number.json": ("config.llm.temperature", "must be a number"),
}


def test_every_broken_fixture_is_covered():
    assert {p.name for p in BROKEN.glob("*.json")} == set(BROKEN_CASES)


@pytest.mark.parametrize("name", sorted(BROKEN_CASES))
def test_broken_file_fails_naming_file_and_field(tmp_path, name):
    field, words = BROKEN_CASES[name]
    with pytest.raises(IngestFailed) as info:
        _read(BROKEN / name, tmp_path)
    problems = info.value.problems
    assert problems and all(p.file == name for p in problems)
    problem = next(p for p in problems if p.field == field)
    assert words in problem.message
    text = str(info.value)
    assert name in text and (field is None or f"'{field}'" in text)


def test_mixed_folder_fails_whole_and_leaves_store_unchanged(tmp_path):
    store = tmp_path / "store"
    ingest("maadbench", ROOT, store)
    manifest_before = read_manifest(store)
    counts_before = _counts(store)

    mixed = tmp_path / "mixed"
    shutil.copytree(ROOT, mixed / "good")
    bad = ["escaped_not_bool.json", "not_maadbench.json", "malformed.json"]
    (mixed / "run_bad").mkdir()
    for name in bad:
        shutil.copy(BROKEN / name, mixed / "run_bad" / name)

    with pytest.raises(IngestFailed) as info:
        ingest("maadbench", mixed, store)
    named = {p.file for p in info.value.problems}
    assert named == {f"run_bad/{name}" for name in bad}  # every bad file listed, no good one
    assert read_manifest(store) == manifest_before
    assert _counts(store) == counts_before


def test_all_problems_of_a_file_are_collected(tmp_path):
    doc = json.loads((ROOT / f"{RUN_A}.json").read_text())
    doc["trace"][1] = "not a step"
    doc["trace"][4]["call_statistic"]["input_tokens"] = "many"
    doc["trace"][6]["verification"] = ["wrong"]
    doc["room"]["puzzles"] = {"P1": {}}
    folder = tmp_path / "several"
    folder.mkdir()
    (folder / "room.json").write_text(json.dumps(doc))
    with pytest.raises(IngestFailed) as info:
        _read(folder, tmp_path)
    assert {p.field for p in info.value.problems} == {
        "trace[1]", "trace[4].call_statistic.input_tokens", "trace[6].verification", "room.puzzles"}
    assert all(p.file == "room.json" for p in info.value.problems)


def test_missing_escaped_is_unknown_not_a_guess(tmp_path):
    doc = json.loads((ROOT / f"{RUN_B}.json").read_text())
    del doc["escaped"]
    (tmp_path / "room.json").write_text(json.dumps(doc))
    runs = _read(tmp_path / "room.json", tmp_path).tables["runs"].to_pylist()
    assert runs[0]["outcome"] == "unknown"


def test_empty_folder_fails(tmp_path):
    (tmp_path / "nothing").mkdir()
    with pytest.raises(IngestFailed, match="no \\*.json"):
        _read(tmp_path / "nothing", tmp_path)


# ------------------------------------------------------------------------------- real data


@pytest.mark.skipif(not (SHARED_DATA / "maadbench").is_dir(),
                    reason="MAADBench-Full is not in ../shared/data (the hub copy is out of reach here)")
def test_real_release_if_present(tmp_path):
    batch = _read(SHARED_DATA / "maadbench", tmp_path)
    write_source(tmp_path / "real", batch.source, batch.tables)  # enforces every store invariant
    assert batch.tables["runs"].num_rows > 0
