"""The Who&When adapter: real Algorithm-Generated counts, CatchBench keys, fixtures, bad input."""
from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

from auditatlas.errors import IngestFailed
from auditatlas.ingest import Context, ingest, whowhen
from auditatlas.store import MANIFEST, write_source
from queries import connect

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
AG = SHARED_DATA / "whowhen" / "Algorithm-Generated"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HAND_CRAFTED = FIXTURES / "whowhen" / "Hand-Crafted"
BROKEN = FIXTURES / "broken" / "whowhen"

needs_data = pytest.mark.skipif(not AG.is_dir(), reason=f"real Who&When data not found at {AG}")


def _read(path: Path, tmp_path: Path):
    return whowhen.read(path, Context(store=tmp_path / "store"))


def _by_run(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(row["run_id"], []).append(row)
    return out


@pytest.fixture(scope="module")
def real_batch(tmp_path_factory):
    if not AG.is_dir():
        pytest.skip(f"real Who&When data not found at {AG}")
    return whowhen.read(AG, Context(store=tmp_path_factory.mktemp("store")))


# --------------------------------------------------------------------------- real data


@needs_data
def test_real_counts_match_the_spec(real_batch):
    runs, steps = real_batch.tables["runs"], real_batch.tables["steps"]
    assert len(runs) == 126
    assert len(steps) == 1099
    assert sum(s["label"] == 1 for s in steps) == 126
    assert sum(s["is_tool"] for s in steps) == 303
    assert {r["outcome"] for r in runs} == {"failure"}  # every released run failed
    assert all(5 <= r["n_steps"] <= 10 for r in runs)


@needs_data
def test_one_decisive_step_per_run_at_the_labelled_index(real_batch):
    steps = _by_run(real_batch.tables["steps"])
    for file in sorted(AG.glob("*.json")):
        record = json.loads(file.read_text(encoding="utf-8"))
        run_steps = steps[f"whowhen:Algorithm-Generated/{file.stem}"]
        assert [s["step_idx"] for s in run_steps if s["label"] == 1] == [int(record["mistake_step"])]
        assert [s["text_out"] for s in run_steps] == [h["content"] for h in record["history"]]  # whole text


@needs_data
def test_file_1_by_hand(real_batch):
    run = next(r for r in real_batch.tables["runs"] if r["run_id"] == "whowhen:Algorithm-Generated/1")
    steps = _by_run(real_batch.tables["steps"])[run["run_id"]]
    assert run["n_steps"] == 6
    assert run["task_id"] == "4d51c4bf-4b0e-4f3d-897b-3f6687a7d9f2"
    assert run["domain"] == "GAIA" and run["difficulty"] == "2"
    assert run["legacy_key"] == "000-7b14128ce504"  # 1.json sorts first as a plain string
    assert [s["agent"] for s in steps] == [
        "Excel_Expert", "Computer_terminal", "BusinessLogic_Expert",
        "Computer_terminal", "DataVerification_Expert", "DataVerification_Expert",
    ]
    assert [s["label"] for s in steps] == [1, 0, 0, 0, 0, 0]
    assert [s["is_tool"] for s in steps] == [False, True, False, True, False, False]
    assert steps[-1]["text_out"] == "TERMINATE"
    assert all(s["scope"] == run["run_id"] and s["scope_success"] is False for s in steps)
    extra = json.loads(run["extra"])
    assert extra["mistake_agent"] == "Excel_Expert" and extra["mistake_step"] == 0
    assert extra["ground_truth"] == "8" and extra["level"] == "2"


@needs_data
def test_file_100_by_hand(real_batch):
    run = next(r for r in real_batch.tables["runs"] if r["run_id"] == "whowhen:Algorithm-Generated/100")
    steps = _by_run(real_batch.tables["steps"])[run["run_id"]]
    assert run["n_steps"] == 10
    assert run["domain"] == "AssistantBench" and run["difficulty"] == "Medium"
    assert [s["step_idx"] for s in steps if s["label"] == 1] == [2]
    assert steps[2]["agent"] == "Movie_Expert"
    assert [s["step_idx"] for s in steps if s["is_tool"]] == [4, 6, 8]


@needs_data
def test_run_keys_and_legacy_keys_equal_the_catchbench_key_map(real_batch):
    ref = resources.files("catchbench") / "data/llm_judge/legacy_run_keys.json"
    key_map = json.loads(ref.read_text(encoding="utf-8"))["keys"]
    runs = real_batch.tables["runs"]
    assert {r["run_key"] for r in runs} == set(key_map.values())
    assert {r["legacy_key"] for r in runs} == set(key_map)
    assert all(key_map[r["legacy_key"]] == r["run_key"] for r in runs)
    # the NNN prefix is the file's position among the paths sorted as plain strings
    order = sorted(str(p) for p in AG.glob("*.json"))
    for run in runs:
        assert int(run["legacy_key"][:3]) == order.index(str(AG / run["source_file"]))


@needs_data
def test_edges_point_backwards_and_cover_full_context_plus_handoff(real_batch):
    runs = {r["run_id"]: r["n_steps"] for r in real_batch.tables["runs"]}
    edges = _by_run(real_batch.tables["edges"])
    for run_id, n in runs.items():
        kinds = [(e["src_idx"], e["dst_idx"], e["kind"]) for e in edges[run_id]]
        assert all(src < dst for src, dst, _ in kinds)
        assert {(s, d) for s, d, k in kinds if k == "context"} == {(i, j) for j in range(n) for i in range(j)}
        assert {(s, d) for s, d, k in kinds if k == "handoff"} == {(i, i + 1) for i in range(n - 1)}
        assert len(kinds) == n * (n - 1) // 2 + n - 1
    assert {e["provenance"] for e in real_batch.tables["edges"]} == {"inferred"}


@needs_data
def test_round_trip_and_idempotent_reingest(real_batch, tmp_path):
    for _ in range(2):  # the second write replaces the source, it does not add to it
        write_source(tmp_path, real_batch.source, real_batch.tables)
        con = connect(tmp_path)
        assert con.execute("SELECT count(*) FROM runs WHERE corpus = 'whowhen'").fetchone()[0] == 126
        assert con.execute("SELECT count(*), sum(label), sum(is_tool::INT) FROM steps WHERE corpus = 'whowhen'").fetchone() == (1099, 126, 303)
        assert con.execute("SELECT title, kind FROM corpora WHERE corpus = 'whowhen'").fetchall() == [("Who&When", "real")]
    longest = max(len(h["content"]) for f in AG.glob("*.json") for h in json.loads(f.read_text(encoding="utf-8"))["history"])
    assert con.execute("SELECT max(length(text_out)) FROM steps WHERE corpus = 'whowhen'").fetchone()[0] == longest


@needs_data
def test_root_with_both_splits(tmp_path):
    root = tmp_path / "Who&When"
    (root / "Algorithm-Generated").mkdir(parents=True)
    shutil.copy(AG / "1.json", root / "Algorithm-Generated" / "1.json")
    shutil.copytree(HAND_CRAFTED, root / "Hand-Crafted")
    batch = _read(root, tmp_path)
    legacy = {r["run_id"]: r["legacy_key"] for r in batch.tables["runs"]}
    assert legacy == {"whowhen:Algorithm-Generated/1": "000-7b14128ce504", "whowhen:Hand-Crafted/7": None}
    assert sorted(r["source_file"] for r in batch.tables["runs"]) == ["Algorithm-Generated/1.json", "Hand-Crafted/7.json"]


# --------------------------------------------------------------------------- authored fixture


def test_hand_crafted_fixture(tmp_path):
    batch = _read(HAND_CRAFTED / "7.json", tmp_path)
    (run,) = batch.tables["runs"]
    steps = batch.tables["steps"]
    assert run["run_id"] == "whowhen:Hand-Crafted/7"
    assert run["outcome"] == "failure"  # is_corrected spelled as the string "False"
    assert run["legacy_key"] is None  # only Algorithm-Generated runs have CatchBench legacy keys
    assert run["run_key"].startswith("sha256-") and len(run["run_key"]) == 7 + 64
    assert run["domain"] == "GAIA" and run["backbone"] is None
    assert [s["agent"] for s in steps] == [  # no `name`: the role is the agent
        "human", "Orchestrator (thought)", "WebSurfer", "Orchestrator (thought)",
        "ComputerTerminal", "Orchestrator (final answer)",
    ]
    assert [s["label"] for s in steps] == [0, 0, 1, 0, 0, 0]
    assert [s["is_tool"] for s in steps] == [False, False, False, False, True, False]  # "Code output" prefix
    assert json.loads(run["extra"])["agent_system"] == "Magentic-One"
    assert len(batch.tables["edges"]) == 15 + 5


def test_outcome_strings_and_booleans(tmp_path):
    record = json.loads((HAND_CRAFTED / "7.json").read_text(encoding="utf-8"))
    for value, outcome in (("True", "success"), (True, "success"), ("false", "failure"), (False, "failure")):
        folder = tmp_path / "Hand-Crafted"
        folder.mkdir(exist_ok=True)
        (folder / "7.json").write_text(json.dumps(dict(record, is_corrected=value)))
        (run,) = _read(folder, tmp_path).tables["runs"]
        assert run["outcome"] == outcome, value
        assert {s["scope_success"] for s in _read(folder, tmp_path).tables["steps"]} == {outcome == "success"}


def test_run_key_is_sha256_of_canonical_json(tmp_path):
    import hashlib

    record = json.loads((HAND_CRAFTED / "7.json").read_text(encoding="utf-8"))
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = "sha256-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert _read(HAND_CRAFTED, tmp_path).tables["runs"][0]["run_key"] == expected


def test_can_read(tmp_path):
    assert whowhen.can_read(HAND_CRAFTED)
    assert whowhen.can_read(HAND_CRAFTED / "7.json")
    assert not whowhen.can_read(FIXTURES / "taubench" / "mini-model-retail.json")
    assert not whowhen.can_read(tmp_path)  # empty folder


# --------------------------------------------------------------------------- bad input

BROKEN_CASES = {
    "malformed.json": None,
    "empty.json": None,
    "not_object.json": None,
    "missing_history.json": "history",
    "history_not_list.json": "history",
    "history_entry_not_object.json": "history[1]",
    "content_not_string.json": "history[0].content",
    "mistake_step_not_int.json": "mistake_step",
    "mistake_step_out_of_range.json": "mistake_step",
    "outcome_not_boolean.json": "is_correct",
}


@pytest.mark.parametrize("name,field", sorted(BROKEN_CASES.items()))
def test_broken_file_names_file_and_field(name, field, tmp_path):
    with pytest.raises(IngestFailed) as info:
        _read(BROKEN / name, tmp_path)
    problems = info.value.problems
    assert len(problems) == 1, [str(p) for p in problems]
    assert Path(problems[0].file).name == name
    assert problems[0].field == field
    assert name in str(info.value)


def test_broken_folder_lists_every_file(tmp_path):
    assert sorted(BROKEN_CASES) == sorted(p.name for p in BROKEN.glob("*.json"))  # cases cover the folder
    with pytest.raises(IngestFailed) as info:
        _read(BROKEN, tmp_path)
    assert sorted(Path(p.file).name for p in info.value.problems) == sorted(BROKEN_CASES)


def test_failed_ingest_leaves_the_store_unchanged(tmp_path):
    store = tmp_path / "store"
    ingest("whowhen", HAND_CRAFTED, store)
    before = (store / MANIFEST).read_text()
    mixed = tmp_path / "mixed" / "Hand-Crafted"
    shutil.copytree(HAND_CRAFTED, mixed)
    shutil.copy(BROKEN / "mistake_step_not_int.json", mixed / "8.json")
    with pytest.raises(IngestFailed) as info:
        ingest("whowhen", mixed, store)
    assert [(Path(p.file).name, p.field) for p in info.value.problems] == [("8.json", "mistake_step")]
    assert (store / MANIFEST).read_text() == before
    assert connect(store).execute("SELECT count(*) FROM runs WHERE corpus = 'whowhen'").fetchone()[0] == 1


def test_nothing_to_read(tmp_path):
    with pytest.raises(IngestFailed):
        _read(tmp_path, tmp_path)
