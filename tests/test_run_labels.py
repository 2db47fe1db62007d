"""Run labels (auditatlas/run_labels.py): short, backbone-free, and telling runs apart.

Expected labels are written out by hand from the ids' documented layouts."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from auditatlas.run_labels import LABEL_CHARS, run_label

ROOM = ("maadbench-sim:run_20260302_080000_livecodebench_tool_deepseek-reasoner_0.6/"
        "20260302080412_EscapeRoom_room_0014_failed")


@pytest.mark.parametrize("run_id, difficulty, label", [
    (ROOM, "hard", "room_0014 · hard · failed · 2026-03-02 08:04"),
    (ROOM, None, "room_0014 · failed · 2026-03-02 08:04"),  # a table without the difficulty column
    (ROOM, math.nan, "room_0014 · failed · 2026-03-02 08:04"),
    (ROOM, pd.NA, "room_0014 · failed · 2026-03-02 08:04"),
    # A nightmare run folder says so itself.
    ("maadbench-sim:run_20260310_140000_gsm-hard_tool_deepseek-reasoner_0.0_nightmare/"
     "20260310181102_EscapeRoom_room_0004_escaped", None, "room_0004 · nightmare · escaped · 2026-03-10 18:11"),
    # A real release read from a deeper folder: the room file is the last part.
    ("maadbench:release/v1/run_20250101_000000_gsm-hard_no_tool_gpt-4.1_0.0/20250101013000_EscapeRoom_room_0042_escaped",
     "easy", "room_0042 · easy · escaped · 2025-01-01 01:30"),
    ("whowhen:Algorithm-Generated/12", "1", "Algorithm-Generated/12"),
    ("whowhen:Hand-Crafted/12", None, "Hand-Crafted/12"),
    ("taubench:gpt-4o-airline.trials01/46-1", None, "gpt-4o-airline.trials01/46-1"),
    ("mine:short", None, "short"),
    # Not a room file (no outcome word): the native id, as any other corpus.
    ("maadbench-sim:run_x/20260302080412_EscapeRoom_room_0014", "hard", "run_x/20260302080412_EscapeRoom_room_0014"),
])
def test_labels(run_id, difficulty, label):
    assert run_label(run_id, difficulty) == label


def test_label_leaves_the_backbone_out():
    assert "deepseek" not in run_label(ROOM, "hard").lower()


def test_a_long_native_id_keeps_its_tail():
    run_id = "mine:" + "a" * 60 + "/run-0007"
    label = run_label(run_id)
    assert len(label) == LABEL_CHARS and label.startswith("…") and label.endswith("a/run-0007")


def test_rooms_of_two_run_folders_read_apart():
    """The same room of two configurations (the id's head differs, its tail repeats) gets two labels."""
    a = "maadbench-sim:run_20260302_080000_gsm-hard_tool_gpt-4.1_0.0/20260302090134_EscapeRoom_room_0001_escaped"
    b = "maadbench-sim:run_20260302_200000_gsm-hard_no_tool_gpt-4.1_0.0/20260302210134_EscapeRoom_room_0001_escaped"
    assert run_label(a, "medium") != run_label(b, "medium")


@pytest.mark.parametrize("value", [None, 7, math.nan])
def test_a_missing_id_has_an_empty_label(value):
    assert run_label(value) == ""


def test_a_run_that_carries_a_name_is_read_by_it():
    """A trace of your own carries its root span's name and start time (the OTLP adapter writes
    it); a long one keeps its tail, where the time is."""
    from auditatlas.run_labels import label_first, row_label

    trace = "mine:" + "a0" * 16
    assert run_label(trace, None, "checkout · 2026-03-02 08:04:11") == "checkout · 2026-03-02 08:04:11"
    assert run_label(trace, None, math.nan) == "a0" * 16
    long = "x" * 60 + " · 2026-03-02 08:04:11"
    assert run_label(trace, None, long).endswith("08:04:11") and len(run_label(trace, None, long)) == LABEL_CHARS
    assert row_label({"run_id": trace, "extra": '{"run_name": "checkout · 2026-03-02 08:04:11"}'}) == \
        "checkout · 2026-03-02 08:04:11"
    assert row_label({"run_id": trace, "extra": "not json"}) == "a0" * 16
    shown = label_first(pd.DataFrame({"run": [trace, ROOM], "steps": [3, 4]}), None, {trace: "checkout · 08:04"})
    assert shown["run"].tolist() == ["checkout · 08:04", "room_0014 · failed · 2026-03-02 08:04"]
    assert shown["run_id"].tolist() == [trace, ROOM]


def test_prediction_sets_read_by_method_protocol_model_and_seed():
    from auditatlas.set_labels import set_labels

    rows = [{"set_id": "rescore-d5102f32-iforest-s0", "method": "iforest", "seed": 0},
            {"set_id": "rescore-77aa0000-iforest-s0", "method": "iforest", "seed": 0.0},
            {"set_id": "rescore-d5102f32-logreg-s1", "method": "logreg", "seed": 1, "protocol": None},
            {"set_id": "judge-x", "method": "llm-judge", "protocol": "all-at-once", "model": "gpt-5.5", "seed": math.nan},
            {"set_id": "release-file", "method": None}]
    assert set_labels(rows) == {
        "rescore-d5102f32-iforest-s0": "iforest · seed 0 (rescore-d5102f32-iforest-s0)",  # two read the same
        "rescore-77aa0000-iforest-s0": "iforest · seed 0 (rescore-77aa0000-iforest-s0)",
        "rescore-d5102f32-logreg-s1": "logreg · seed 1",
        "judge-x": "llm-judge · all-at-once · gpt-5.5",
        "release-file": "release-file"}


@pytest.mark.parametrize("action, shown", [
    ("AGENT:invoke_agent", "AGENT:invoke_agent"),  # whole: it fits
    ("TOOL:a_really_long_tool_name", "a_really_long_tool_…"),  # the kind goes first, then the tail
    ("LLM", "LLM")])
def test_a_graph_node_shows_its_action_whole_where_it_fits(action, shown):
    from auditatlas.figures.trace_graph import node_action

    assert node_action(action) == shown
