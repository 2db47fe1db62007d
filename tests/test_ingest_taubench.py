"""The tau-bench adapter: real GPT-4o airline file, an authored retail fixture, bad input."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from auditatlas.errors import IngestFailed
from auditatlas.ingest import Context, ingest, taubench
from auditatlas.store import MANIFEST, write_source
from queries import connect

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REAL = SHARED_DATA / "tau-bench" / "gpt-4o-airline.trials01.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINI = FIXTURES / "taubench" / "mini-model-retail.json"
BROKEN = FIXTURES / "broken" / "taubench"

needs_data = pytest.mark.skipif(not REAL.is_file(), reason=f"real tau-bench data not found at {REAL}")
READS = {"get_reservation_details", "search_direct_flight", "get_user_details", "search_onestop_flight"}
WRITES = {"update_reservation_flights", "cancel_reservation", "book_reservation",
          "update_reservation_baggages", "send_certificate", "update_reservation_passengers"}


def _read(path: Path, tmp_path: Path):
    return taubench.read(path, Context(store=tmp_path / "store"))


def _by_run(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(row["run_id"], []).append(row)
    return out


@pytest.fixture(scope="module")
def raw():
    if not REAL.is_file():
        pytest.skip(f"real tau-bench data not found at {REAL}")
    return json.loads(REAL.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def real_batch(tmp_path_factory, raw):
    return taubench.read(REAL, Context(store=tmp_path_factory.mktemp("store")))


# --------------------------------------------------------------------------- real data


@needs_data
def test_real_runs_and_outcomes_equal_the_rewards(real_batch, raw):
    runs = real_batch.tables["runs"]
    assert len(runs) == 100
    rewards = Counter(r["reward"] for r in raw)  # independent reference: the file itself
    outcomes = Counter(r["outcome"] for r in runs)
    assert outcomes == {"success": rewards[1.0], "failure": rewards[0.0]}
    by_id = {r["run_id"]: r["outcome"] for r in runs}
    for item in raw:
        expected = "success" if item["reward"] == 1.0 else "failure"
        assert by_id[f"taubench:gpt-4o-airline.trials01/{item['task_id']}-{item['trial']}"] == expected
    assert {(r["backbone"], r["domain"]) for r in runs} == {("gpt-4o", "airline")}
    assert {r["source_file"] for r in runs} == {"gpt-4o-airline.trials01.json"}


@needs_data
def test_real_steps_skip_system_and_mark_tools(real_batch, raw):
    steps = _by_run(real_batch.tables["steps"])
    for item in raw:
        run_steps = steps[f"taubench:gpt-4o-airline.trials01/{item['task_id']}-{item['trial']}"]
        kept = [m for m in item["traj"] if m["role"] != "system"]
        assert len(run_steps) == len(kept)
        assert [s["is_tool"] for s in run_steps] == [m["role"] == "tool" for m in kept]
        assert [s["agent"] for s in run_steps] == [{"user": "user", "assistant": "gpt-4o", "tool": "env"}[m["role"]] for m in kept]
    all_steps = real_batch.tables["steps"]
    assert sum(s["is_tool"] for s in all_steps) == sum(m["role"] == "tool" for r in raw for m in r["traj"])
    assert {s["label"] for s in all_steps} == {None}
    assert {s["label_source"] for s in all_steps} == {"none (run outcome only)"}


@needs_data
def test_task_0_trial_0_by_hand(real_batch, raw):
    run_id = "taubench:gpt-4o-airline.trials01/0-0"
    run = next(r for r in real_batch.tables["runs"] if r["run_id"] == run_id)
    steps = _by_run(real_batch.tables["steps"])[run_id]
    traj = next(r for r in raw if r["task_id"] == 0 and r["trial"] == 0)["traj"]
    assert run["outcome"] == "failure" and run["n_steps"] == 31  # 32 messages minus the system one
    assert json.loads(run["extra"])["user_id"] == "mia_li_3668"
    assert steps[0]["action"] == "user_message" and steps[0]["step_id"] == "1"
    assert steps[0]["text_out"] == traj[1]["content"]
    assert steps[5]["action"] == "tool_call:get_user_details"
    assert "call_" in steps[5]["text_out"]  # the tool calls are serialised into the text
    assert steps[6]["action"] == "get_user_details" and steps[6]["agent"] == "env"
    assert steps[20]["action"] == "book_reservation"
    edges = [(e["src_idx"], e["dst_idx"], e["kind"]) for e in _by_run(real_batch.tables["edges"])[run_id]]
    # reads before the booking: get_user_details (6), search_direct_flight (8), search_onestop_flight (12);
    # calculate (16) is no database read
    assert sorted((s, d) for s, d, k in edges if k == "read_write" and d == 20) == [(6, 20), (8, 20), (12, 20)]
    assert (19, 20, "tool_call") in edges


@needs_data
def test_real_edges(real_batch, raw):
    steps = {(s["run_id"], s["step_idx"]): s for s in real_batch.tables["steps"]}
    edges = real_batch.tables["edges"]
    assert all(e["src_idx"] < e["dst_idx"] for e in edges)
    calls = [e for e in edges if e["kind"] == "tool_call"]
    assert len(calls) == sum(m["role"] == "tool" for r in raw for m in r["traj"])
    for e in calls:
        src, dst = steps[(e["run_id"], e["src_idx"])], steps[(e["run_id"], e["dst_idx"])]
        assert e["provenance"] == "observed"
        assert src["action"] == f"tool_call:{dst['action']}"
        assert json.loads(dst["extra"])["tool_call_id"] in src["text_out"]
    rw = [e for e in edges if e["kind"] == "read_write"]
    assert rw and {e["provenance"] for e in rw} == {"modeled"}
    for e in rw:
        assert steps[(e["run_id"], e["src_idx"])]["action"] in READS
        assert steps[(e["run_id"], e["dst_idx"])]["action"] in WRITES


@needs_data
def test_round_trip_and_idempotent_reingest(real_batch, raw, tmp_path):
    n_success = sum(r["reward"] == 1.0 for r in raw)
    n_steps = sum(m["role"] != "system" for r in raw for m in r["traj"])
    for _ in range(2):
        write_source(tmp_path, real_batch.source, real_batch.tables)
        con = connect(tmp_path)
        assert con.execute("SELECT count(*), count(*) FILTER (outcome = 'success') FROM runs WHERE corpus = 'taubench'").fetchone() == (100, n_success)
        assert con.execute("SELECT count(*) FROM steps WHERE corpus = 'taubench'").fetchone()[0] == n_steps
        assert con.execute("SELECT title FROM corpora WHERE corpus = 'taubench'").fetchone()[0] == "tau-bench"


# --------------------------------------------------------------------------- authored fixture


def test_mini_fixture_by_hand(tmp_path):
    batch = _read(MINI, tmp_path)
    runs = {r["run_id"]: r for r in batch.tables["runs"]}
    assert set(runs) == {"taubench:mini-model-retail/3-0", "taubench:mini-model-retail/5-1"}
    a, b = runs["taubench:mini-model-retail/3-0"], runs["taubench:mini-model-retail/5-1"]
    assert (a["outcome"], b["outcome"]) == ("success", "failure")
    assert (a["backbone"], a["domain"]) == ("mini-model", "retail")
    assert json.loads(a["extra"]) == {"trial": 0, "reward": 1.0, "user_id": "ana_ruiz_1234",
                                       "instruction": "You are ana_ruiz_1234 and want to cancel order #W1."}
    steps = _by_run(batch.tables["steps"])
    assert [s["action"] for s in steps[a["run_id"]]] == [
        "user_message", "tool_call:get_order_details", "get_order_details", "tool_call:think", "think",
        "tool_call:cancel_pending_order", "cancel_pending_order", "assistant_message", "user_message",
    ]
    assert steps[a["run_id"]][5]["text_out"].startswith("Cancelling it now.\n\n[")
    assert steps[a["run_id"]][6]["text_in"] == json.dumps({"order_id": "#W1", "reason": "no longer needed"})
    assert [s["action"] for s in steps[b["run_id"]]][1] == "tool_call:get_user_details,get_order_details"
    edges = _by_run(batch.tables["edges"])
    as_set = lambda rid: {(e["src_idx"], e["dst_idx"], e["kind"], e["provenance"]) for e in edges[rid]}  # noqa: E731
    assert as_set(a["run_id"]) == {(1, 2, "tool_call", "observed"), (3, 4, "tool_call", "observed"),
                                   (5, 6, "tool_call", "observed"), (2, 6, "read_write", "modeled")}
    assert as_set(b["run_id"]) == {(1, 2, "tool_call", "observed"), (1, 3, "tool_call", "observed"),
                                   (4, 5, "tool_call", "observed"), (2, 5, "read_write", "modeled"),
                                   (3, 5, "read_write", "modeled")}


def test_unknown_file_name_falls_back(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(MINI, folder / "traces.json")
    batch = _read(folder, tmp_path)
    assert {(r["backbone"], r["domain"]) for r in batch.tables["runs"]} == {("unknown", "retail")}  # from the policy title
    assert "assistant" in {s["agent"] for s in batch.tables["steps"]}


def test_can_read(tmp_path):
    assert taubench.can_read(MINI)
    assert taubench.can_read(MINI.parent)
    assert not taubench.can_read(FIXTURES / "whowhen" / "Hand-Crafted" / "7.json")
    assert not taubench.can_read(tmp_path)


# --------------------------------------------------------------------------- bad input

BROKEN_CASES = {
    "malformed.json": None,
    "empty.json": None,
    "not_list.json": None,
    "empty_list.json": None,
    "missing_traj.json": "[0].traj",
    "traj_not_list.json": "[0].traj",
    "reward_not_number.json": "[0].reward",
    "task_id_not_int.json": "[0].task_id",
    "orphan_tool_result.json": "[0].traj[3].tool_call_id",
    "unknown_role.json": "[0].traj[1].role",
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
    assert sorted(BROKEN_CASES) == sorted(p.name for p in BROKEN.glob("*.json"))
    with pytest.raises(IngestFailed) as info:
        _read(BROKEN, tmp_path)
    assert sorted(Path(p.file).name for p in info.value.problems) == sorted(BROKEN_CASES)


def test_failed_ingest_leaves_the_store_unchanged(tmp_path):
    store = tmp_path / "store"
    ingest("taubench", MINI, store)
    before = (store / MANIFEST).read_text()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(MINI, mixed / "mini-model-retail.json")
    shutil.copy(BROKEN / "reward_not_number.json", mixed / "other-retail.json")
    with pytest.raises(IngestFailed) as info:
        ingest("taubench", mixed, store)
    assert [(Path(p.file).name, p.field) for p in info.value.problems] == [("other-retail.json", "[0].reward")]
    assert (store / MANIFEST).read_text() == before
    assert connect(store).execute("SELECT count(*) FROM runs WHERE corpus = 'taubench'").fetchone()[0] == 2


def test_duplicate_task_and_trial_is_refused(tmp_path):
    runs = json.loads(MINI.read_text(encoding="utf-8"))
    path = tmp_path / "dup-retail.json"
    path.write_text(json.dumps([runs[0], runs[0]]))
    with pytest.raises(IngestFailed) as info:
        _read(path, tmp_path)
    assert [p.field for p in info.value.problems] == ["[1].trial"]
