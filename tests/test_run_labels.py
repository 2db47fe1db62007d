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
