"""Released detector predictions (MAADBench benchmark_AD CSVs) joined to steps in the store.

The store holds a tiny MAADBench corpus written directly (source "maadbench"), laid out as the
MAADBench importer stores it: runs.source_file relative to the ingested folder, steps.step_id =
action_id, steps.step_idx = 0-based trace position. The CSV fixtures reference those steps.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from auditatlas.errors import IngestFailed
from auditatlas.ingest import Context, ingest, predictions
from auditatlas.store import read_manifest, write_source
from queries import connect

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # not needed: fixtures are authored
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD = FIXTURES / "predictions"
BROKEN = FIXTURES / "broken" / "predictions"
LONG = GOOD / "xgboost" / "seed_0" / "predictions.csv"
WIDE = GOOD / "figures_wide.csv"

RUN_A = "run_20250101_000000_gsm-hard_tool_gpt-4.1_0.0/20250101000001_EscapeRoom_room_0000_failed.json"
RUN_B = "run_20250101_000000_gsm-hard_tool_gpt-4.1_0.3/20250101000001_EscapeRoom_room_0000_failed.json"
RUN_C = "b_run/20250102000001_EscapeRoom_room_0001_escaped.json"
ACTIONS = ["OBSERVE_CLUE", "SOLVE_CLUE", "OBSERVE_ITEM", "APPLY_DELTA"]


def run_id(source_file: str) -> str:
    return "maadbench:" + source_file[: -len(".json")]


def tiny_store(root: Path) -> Path:
    runs, steps = [], []
    for source_file, room, labels, outcome in [
        (RUN_A, "room_0000", [0, 1, 0, 1], "failure"),
        (RUN_B, "room_0000", [0, 1, 0], "failure"),
        (RUN_C, "room_0001", [0, 0], "success"),
    ]:
        runs.append({"run_id": run_id(source_file), "corpus": "maadbench", "source_file": source_file,
                     "room_id": room, "outcome": outcome, "n_steps": len(labels)})
        for k, label in enumerate(labels):
            steps.append({"run_id": run_id(source_file), "corpus": "maadbench", "step_idx": k,
                          "step_id": f"{room}_P1_{ACTIONS[k]}_{k + 1}", "action": ACTIONS[k], "label": label})
    write_source(root, "maadbench", {"runs": runs, "steps": steps})
    return root


@pytest.fixture
def store(tmp_path) -> Path:
    return tiny_store(tmp_path / "store")


def view(store: Path, sql: str, params: list | None = None) -> list[tuple]:
    cur = connect(store)
    try:
        return cur.execute(sql, params or []).fetchall()
    finally:
        cur.close()


def problems_of(info: pytest.ExceptionInfo) -> set[tuple[str, str | None]]:
    return {(Path(p.file).name, p.field) for p in info.value.problems}


def write_csv(path: Path, header: str, *rows: str) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


# ----------------------------------------------------------------------------- long form


def test_long_csv_joins_steps_and_reports_the_unmatched_row(store):
    batch, entry = ingest("predictions", LONG, store)
    assert batch.source == "predictions-xgboost-seed0"
    assert entry["rows"]["predictions"] == 8
    assert batch.notes == [
        f"1 of 9 rows of {LONG} match no step in the store (e.g. {RUN_A} room_0000_P1_OBSERVE_PUZZLE_5 4)."]
    sets = view(store, """SELECT set_id, corpus, method, family, supervision, granularity, seed, origin,
                                 json_extract_string(params, '$.form') FROM prediction_sets""")
    assert sets == [("maadbench:predictions-xgboost-seed0:xgboost:seed0", "maadbench", "xgboost", "tree",
                     "supervised", "step", 0, "release", "long")]


def test_long_csv_scores_and_ranks_in_predictions_view(store):
    ingest("predictions", LONG, store)
    rows = view(store, """SELECT run_id, step_idx, score, pred_label, split, rank FROM predictions
                          ORDER BY run_id, step_idx""")
    # Run A is named by an absolute path in the CSV, run B by the stored relative path and run C
    # by its bare file name: all three resolve.
    assert rows == [
        (run_id(RUN_C), 1, 0.55, 1, "test", 1),
        (run_id(RUN_A), 0, 0.10, 0, "test", 4),
        (run_id(RUN_A), 1, 0.90, 1, "test", 1),
        (run_id(RUN_A), 2, 0.20, 0, "test", 3),
        (run_id(RUN_A), 3, 0.70, 1, "test", 2),
        (run_id(RUN_B), 0, 0.60, 1, "test", 1),
        (run_id(RUN_B), 1, 0.30, 0, "test", 3),
        (run_id(RUN_B), 2, 0.40, 0, "test", 2),
    ]


def test_method_and_seed_overrides(store, tmp_path):
    batch = predictions.read(LONG, Context(store=store), method="XGBoost tuned", seed=4)
    assert batch.source == "predictions-xgboost-tuned-seed4"
    (prediction_set,) = batch.tables["prediction_sets"]
    assert (prediction_set["method"], prediction_set["seed"]) == ("XGBoost tuned", 4)
    assert prediction_set["set_id"] == "maadbench:predictions-xgboost-tuned-seed4:XGBoost tuned:seed4"


# ----------------------------------------------------------------------------- wide form


def test_wide_csv_gives_one_prediction_set_per_method(store):
    batch, _ = ingest("predictions", WIDE, store)
    assert batch.source == "predictions-figures_wide"
    # The last row names SOLVE_CLUE at position 3, where run A has APPLY_DELTA: no step.
    assert batch.notes == [f"1 of 5 rows of {WIDE} match no step in the store "
                           f"(e.g. data/{RUN_A} room_0000_P1_SOLVE_CLUE_2 3)."]
    rows = view(store, """SELECT s.method, s.seed, p.step_idx, p.score, p.pred_label, p.rank
                          FROM predictions p JOIN prediction_sets s USING (set_id) ORDER BY s.method, p.step_idx""")
    assert rows == [
        ("lof", None, 0, -1.5, None, 4), ("lof", None, 1, 2.0, None, 1),
        ("lof", None, 2, 0.5, None, 3), ("lof", None, 3, 1.0, None, 2),
        ("xgboost", None, 0, 0.15, 0, 4), ("xgboost", None, 1, 0.85, 1, 1),
        ("xgboost", None, 2, 0.25, 0, 3), ("xgboost", None, 3, 0.65, 1, 2),
    ]
    assert {r[0] for r in view(store, "SELECT set_id FROM prediction_sets")} == {
        "maadbench:predictions-figures_wide:xgboost", "maadbench:predictions-figures_wide:lof"}


def test_folder_ingests_every_prediction_csv(store):
    batch, entry = ingest("predictions", GOOD, store)
    assert batch.source == "predictions-predictions"
    assert entry["rows"]["prediction_sets"] == 3 and entry["rows"]["predictions"] == 8 + 4 + 4
    assert len(batch.notes) == 2


def test_reingest_replaces_instead_of_duplicating(store):
    ingest("predictions", LONG, store)
    ingest("predictions", LONG, store)
    assert view(store, "SELECT count(*) FROM predictions") == [(8,)]
    assert sorted(read_manifest(store)["sources"]) == ["maadbench", "predictions-xgboost-seed0"]


# ----------------------------------------------------------------------------- join edge cases


HEADER = "source_file,action_id,step_num,gt_label,pred_score"


def test_path_suffix_must_end_at_a_path_boundary_and_be_unambiguous(store, tmp_path):
    csv = write_csv(
        tmp_path / "edge.csv", HEADER,
        f"/data/{RUN_A},room_0000_P1_OBSERVE_CLUE_1,0,0,0.3",
        # "ab_run/..." ends with "b_run/..." but not at a "/": not run C.
        "/data/ab_run/20250102000001_EscapeRoom_room_0001_escaped.json,room_0001_P1_OBSERVE_CLUE_1,0,0,0.4",
        # Runs A and B share this file name and action id: ambiguous, left out and reported.
        "20250101000001_EscapeRoom_room_0000_failed.json,room_0000_P1_OBSERVE_CLUE_1,0,0,0.5",
    )
    batch = predictions.read(csv, Context(store=store))
    assert len(batch.tables["predictions"]) == 1
    assert batch.tables["predictions"]["run_id"].to_pylist() == [run_id(RUN_A)]
    assert batch.notes == [
        f"1 of 3 rows of {csv} match no step in the store (e.g. /data/ab_run/20250102000001_EscapeRoom_room_0001"
        "_escaped.json room_0001_P1_OBSERVE_CLUE_1 0).",
        f"1 of 3 rows of {csv} match steps of more than one run and were left out (e.g. 20250101000001_EscapeRoom_"
        "room_0000_failed.json room_0000_P1_OBSERVE_CLUE_1 0); a longer source_file path would tell them apart.",
    ]


def test_gt_label_disagreement_and_duplicate_rows_are_reported(store, tmp_path):
    csv = write_csv(tmp_path / "dup.csv", HEADER,
                    f"{RUN_A},room_0000_P1_SOLVE_CLUE_2,1,0,0.8",
                    f"{RUN_A},room_0000_P1_SOLVE_CLUE_2,1.0,1,0.2")
    batch = predictions.read(csv, Context(store=store))
    assert batch.tables["predictions"]["score"].to_pylist() == [0.8]
    assert batch.notes == [
        f"1 of 2 joined rows of {csv} carry a gt_label that differs from the stored step label "
        f"(e.g. {RUN_A} room_0000_P1_SOLVE_CLUE_2 1: gt_label 0, step label 1).",
        f"1 rows of {csv} (pred_score) repeat a step already predicted; kept the first.",
    ]


def test_no_joined_row_fails_and_leaves_the_store_unchanged(store):
    before = read_manifest(store)
    with pytest.raises(IngestFailed) as info:
        ingest("predictions", BROKEN / "unmatched.csv", store)
    assert problems_of(info) == {("unmatched.csv", "source_file")}
    assert "none of its 1 rows match a step" in str(info.value)
    assert read_manifest(store) == before


def test_empty_store_means_nothing_joins(tmp_path):
    with pytest.raises(IngestFailed, match="ingest the traces first"):
        predictions.read(LONG, Context(store=tmp_path / "nothing-here"))


# ----------------------------------------------------------------------------- broken input


@pytest.mark.parametrize("name, field", [
    ("missing_action_id.csv", "action_id"),
    ("bad_score.csv", "pred_score"),
    ("bad_label.csv", "pred_label"),
    ("bad_step_num.csv", "step_num"),
    ("wide_bad_score.csv", "pred_score_lof"),
    ("header_only.csv", None),
    ("empty.csv", None),
])
def test_broken_file_names_file_and_column(store, name, field):
    with pytest.raises(IngestFailed) as info:
        predictions.read(BROKEN / name, Context(store=store))
    assert problems_of(info) == {(name, field)}


def test_bad_score_message_points_at_the_row(store):
    with pytest.raises(IngestFailed) as info:
        predictions.read(BROKEN / "bad_score.csv", Context(store=store))
    (problem,) = info.value.problems
    assert problem.message == "1 row(s) where the value is not a number (first: data row 1, value 'high')."


def test_folder_with_bad_files_fails_listing_every_one(store, tmp_path):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for file in [*BROKEN.iterdir(), WIDE]:
        (mixed / file.name).write_bytes(file.read_bytes())
    (mixed / "summary.csv").write_text("action_id,agent\nroom_0000_P1_OBSERVE_CLUE_1,observer\n")
    with pytest.raises(IngestFailed) as info:
        ingest("predictions", mixed, store)
    names = {name for name, _ in problems_of(info)}
    assert names == {p.name for p in BROKEN.iterdir()}  # summary.csv (no score column) is not one
    assert sorted(read_manifest(store)["sources"]) == ["maadbench"]


# ----------------------------------------------------------------------------- naming and detection


def test_names_come_from_the_file_location():
    assert predictions.infer_method(Path("out/xgboost/seed_3/predictions.csv")) == "xgboost"
    assert predictions.infer_seed(Path("out/xgboost/seed_3/predictions.csv")) == 3
    assert predictions.infer_method(Path("out/lof_scores.csv")) == "lof_scores"
    assert predictions.infer_seed(Path("out/lof_scores.csv")) is None
    assert predictions.source_name(LONG) == "predictions-xgboost-seed0"
    assert predictions.source_name(Path("My Preds!.csv")) == "predictions-my-preds"


def test_can_read():
    assert predictions.can_read(LONG) and predictions.can_read(WIDE) and predictions.can_read(GOOD)
    assert not predictions.can_read(BROKEN / "missing_action_id.csv")
    assert not predictions.can_read(BROKEN / "empty.csv")
    assert not predictions.can_read(FIXTURES / "whowhen")


# ----------------------------------------------------------------------------- with the MAADBench importer

MAADBENCH_FIXTURES = FIXTURES / "maadbench"


def test_joins_steps_stored_by_the_maadbench_importer(tmp_path):
    """Rows named the way benchmark_AD names them (absolute source_file) join the importer's steps."""
    store = tmp_path / "store"
    ingest("maadbench", MAADBENCH_FIXTURES, store)
    steps = view(store, """SELECT r.source_file, s.step_id, s.step_idx, s.label FROM steps s JOIN runs r USING (run_id)
                           WHERE s.step_id IS NOT NULL ORDER BY r.source_file, s.step_idx""")
    assert steps, "the MAADBench fixtures should hold steps with action ids"
    rows = [f"/home/u/MAADBench/data/{sf},{sid},{idx},{'' if label is None else label},{idx / 100}"
            for sf, sid, idx, label in steps]
    csv = write_csv(tmp_path / "predictions.csv", HEADER, *rows)
    batch, entry = ingest("predictions", csv, store)
    # Ambiguity would only come from a run repeating (file, action id, position): none does.
    assert entry["rows"]["predictions"] == len(steps)
    assert [n for n in batch.notes if "match" in n] == []
    assert {r[0] for r in view(store, "SELECT DISTINCT corpus FROM prediction_sets")} == {
        r[0] for r in view(store, "SELECT DISTINCT corpus FROM runs")}
