"""The simulated corpus at MAADBench's size looks like the paper, and any chunking of it is the
same corpus.

Expectations are the paper's published numbers, typed in here from
``shared/specs/maadbench.md`` (Tables 2, 3 and 4), never computed with the simulator. The
5,200-room corpus goes through the product path (``build_demo``: simulate, MAADBench importer,
store) and the figures are read with the app's own queries, so the test checks what the
Overview shows.
"""
from __future__ import annotations

import json
import math

import pytest

import queries
from auditatlas import actions, simulator
from auditatlas.analyses import step_rates as rates
from auditatlas.ingest import demo

ROOMS, SEED = 5200, 0  # MAADBench-Full's size
pytestmark = pytest.mark.slow  # 5,200 rooms: deselect with -m "not slow" for a quick loop
PER_CELL = ROOMS // 20  # rooms per backbone x difficulty

# Table 3: action success rate (%).
from paper_tables import TABLE3  # noqa: E402

# Table 2: room success (%) for easy / medium / hard / extreme (nightmare).
TABLE2 = {
    "Claude Opus 4.8": (70.0, 63.0, 29.0, 30.0),
    "Claude Sonnet 4.6": (52.3, 35.3, 11.0, 19.3),
    "DeepSeek-R1": (66.7, 42.0, 12.3, 22.0),
    "GPT-4.1": (46.3, 19.0, 3.0, 0.0),
    "GPT-5.4": (60.0, 27.0, 10.3, 0.3),
}
DIFFICULTIES = ("easy", "medium", "hard", "nightmare")
# Table 4: silent-failure rate (%), formatting errors apart.
TABLE4 = {"Claude Opus 4.8": 9.0, "Claude Sonnet 4.6": 7.7, "DeepSeek-R1": 30.4, "GPT-4.1": 12.2, "GPT-5.4": 11.4}


@pytest.fixture(scope="module")
def maadbench_size_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("maadbench-size")
    demo.build_demo(store, rooms=ROOMS, seed=SEED)
    return store


def test_action_success_within_3_points_of_table3(maadbench_size_store):
    counts = queries.run("action_rates", {"slice": {}}, root=maadbench_size_store)
    table = rates.action_success(counts).set_index(["backbone", "action"])
    off, checked = [], 0
    for backbone, row in TABLE3.items():
        for action, published in row.items():
            cell = table.loc[(backbone, action)]
            if cell["labeled_steps"] < 200:  # thin cells are not checked (none are, at this size)
                continue
            checked += 1
            if abs(cell["success_pct"] - published) > 3.0:
                off.append(f"{backbone} {action}: {cell['success_pct']:.1f} vs {published} (n={cell['labeled_steps']})")
    assert not off, off
    assert checked == 35


def test_room_success_within_tolerance_of_table2(maadbench_size_store):
    con = queries.connect(maadbench_size_store)
    rows = con.execute(
        "SELECT backbone, difficulty, count(*), 100.0 * avg((outcome = 'success')::INT) FROM runs GROUP BY ALL"
    ).fetchall()
    observed = {(b, d): (n, pct) for b, d, n, pct in rows}
    off = []
    for backbone, cells in TABLE2.items():
        for difficulty, published in zip(DIFFICULTIES, cells):
            n, pct = observed[(backbone, difficulty)]
            assert n == PER_CELL
            two_se = 200 * math.sqrt(published / 100 * (1 - published / 100) / n)
            if abs(pct - published) > max(5.0, two_se):
                off.append(f"{backbone} {difficulty}: {pct:.1f} vs {published} (tolerance {max(5.0, two_se):.1f})")
    assert not off, off


def test_silent_failures_within_3_points_of_table4(maadbench_size_store):
    table = rates.silent_failures(queries.run("silent_failures", {"slice": {}}, root=maadbench_size_store))
    silent = dict(zip(table["backbone"], table["silent_pct"]))
    off = [f"{b}: {silent[b]:.1f} vs {published}" for b, published in TABLE4.items()
           if abs(silent[b] - published) > 3.0]
    assert not off, off
    # Formatting errors stay apart and are few; an anomaly without a puzzle outcome never occurs.
    assert (table["format_errors"] < 0.1 * table["action_failures"]).all()
    assert (table["anomalies_without_scope_outcome"] == 0).all()


# --------------------------------------------------------------------------- chunking


def _ids(pairs):
    return [(path, json.dumps(doc, sort_keys=True)) for path, doc in pairs]


def test_a_room_does_not_depend_on_the_chunking():
    """Two chunkings of rooms 5,100..5,299 (across the first stream block at 5,200) agree."""
    block = simulator.BLOCK_ROOMS
    assert 5100 < block < 5300  # the range crosses a block boundary
    whole = _ids(simulator.iter_rooms(10_000, SEED, 5100, 5300))
    cuts = [5100, 5137, block, block + 51, 5300]
    pieces = [pair for a, b in zip(cuts, cuts[1:]) for pair in _ids(simulator.iter_rooms(10_000, SEED, a, b))]
    assert pieces == whole
    # the corpus size only bounds the range: the same room in a smaller corpus is the same room
    assert _ids(simulator.iter_rooms(5300, SEED, 5290, 5300)) == whole[-10:]


def test_first_rooms_agree_from_any_start():
    whole = _ids(simulator.iter_rooms(40, SEED))
    assert _ids(simulator.iter_rooms(40, SEED, 13, 40)) == whole[13:]
    assert _ids(simulator.iter_rooms(40, SEED, 0, 13)) == whole[:13]
    assert list(simulator.iter_rooms(40, SEED, 7, 7)) == []
    for bad in ((-1, 5), (5, 41), (9, 3)):
        with pytest.raises(ValueError):
            list(simulator.iter_rooms(40, SEED, *bad))


def test_documents_are_exactly_what_the_files_hold(tmp_path):
    counts = simulator.simulate(tmp_path, rooms=30, seed=2)
    files = {f.relative_to(tmp_path).as_posix(): json.loads(f.read_text()) for f in tmp_path.rglob("*.json")}
    docs = dict(simulator.iter_rooms(30, 2))
    assert len(files) == len(docs) == counts["rooms"] == 30
    assert files == docs  # same paths, and each document equals its parsed file (plain JSON types)


def test_one_action_table():
    """Every simulated step's action and agent come from ``auditatlas.actions``."""
    assert simulator.ACTIONS == {a.short: a.code for a in actions.ACTIONS}
    assert simulator.AGENTS == {a.short: a.agent for a in actions.ACTIONS}
    seen = set()
    for _, doc in simulator.iter_rooms(60, SEED):
        for entry in doc["trace"]:
            code = "OBSERVE_CLUE" if entry["action"] == "OBSERVE_PLANNED_CLUE" else entry["action"]
            assert entry["agent"] == actions.BY_CODE[code].agent
            seen.add(code)
    assert seen == {a.code for a in actions.ACTIONS}


def test_shipped_calibration_is_this_models_solution():
    """The solution shipped in the package is what solving now gives, and it is current: a
    change to the model, the tables or the actions must be followed by `python -m
    auditatlas.simulator` (else every process would solve again, silently slower)."""
    from auditatlas.simulator import model

    shipped = json.loads(model.CALIBRATION_FILE.read_text())
    assert shipped["key"] == model.solution_key(), "run `python -m auditatlas.simulator` to re-solve"
    assert sorted(shipped["solutions"]) == sorted(bb.model for bb in model.BACKBONES)
    for name, stored in shipped["solutions"].items():
        assert model.solve_calibration(name) == pytest.approx(stored, rel=1e-7, abs=1e-9)
