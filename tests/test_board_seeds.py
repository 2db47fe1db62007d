"""A re-scored detector's seeds as one board entrant, and the board's one coverage line.

Expected spreads are worked out by hand on literal numbers (sample standard deviation, ddof=1),
never with the code under test.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from auditatlas.analyses.board_registry import BoardResult, BoardRow
from auditatlas.analyses.board_seeds import Coverage, contrasts_text, coverage_line, entries, seed_group, spread
from auditatlas.stats import Contrast

TOP1 = [0.40, 0.42, 0.44, 0.46, 0.48]  # mean 0.44; squared deviations sum 0.004; sd sqrt(0.004 / 4) = sqrt(0.001)


def test_spread_is_mean_sample_sd_and_range():
    s = spread(TOP1)
    assert s.mean == pytest.approx(0.44)
    assert s.sd == pytest.approx(math.sqrt(0.001))  # 0.0316..., ddof=1 (ddof=0 would be sqrt(0.0008))
    assert (s.low, s.high, s.n) == (pytest.approx(0.40), pytest.approx(0.48), 5)
    assert s.text() == "0.440 ± 0.032 (0.400–0.480)"


def test_spread_leaves_out_undefined_seeds_and_has_no_sd_for_one():
    s = spread([0.5, None, float("nan"), 0.7])
    assert (s.mean, s.n) == (pytest.approx(0.6), 2)
    assert s.sd == pytest.approx(np.sqrt(0.02))  # ((0.1)^2 + (0.1)^2) / (2 - 1)
    one = spread([0.3])
    assert math.isnan(one.sd) and one.text() == "0.300"
    assert spread([None]).n == 0 and spread([None]).text() == ""


def _meta(seed, origin="rescore", method="copod", batch="rescore-ab12"):
    return {"set_id": f"{batch}-{method}-s{seed}", "origin": origin, "method": method, "feature_set": "structural",
            "protocol": None, "model": None, "seed": seed, "source_file": batch}


def test_only_rescored_sets_with_a_seed_join_a_group():
    assert seed_group(_meta(0)) == seed_group(_meta(4)) == "copod · structural [rescore-ab12]"
    assert seed_group(_meta(0, origin="release")) is None  # a released set keeps its own row
    assert seed_group(_meta(None)) is None
    assert seed_group(_meta(0, batch="rescore-cd34")) != seed_group(_meta(0))  # another batch, another group


def _board(rows, contrasts=()):
    return BoardResult("post-localization", "POST localization", "POST", "c", ("top1",), "random", 100, "failed runs",
                       rows, list(contrasts), primary_metric="top1", primary_contrast_family="Top-1 vs position",
                       family_labels={"Top-1 vs position": "Top-1"})


def _contrast(name, separates, diff=0.1):
    return Contrast("Top-1 vs position", name, "position", 0.5, 0.4, diff, 0.0, 0.2, 0.01 if separates else 0.5,
                    "McNemar", p_adj=0.01 if separates else 0.5, verdict="separates" if separates else "unresolved")


def test_seeds_become_one_entrant_and_other_rows_stay_as_scored():
    seeds = [BoardRow(f"rescore-ab12-copod-s{i}", {"top1": v}, n_items=n, seed_group=seed_group(_meta(i)), seed=i)
             for i, (v, n) in enumerate(zip(TOP1, [226, 230, 240, 244, 244]))]
    released = BoardRow("llm-judge all-at-once (gpt-5.5)", {"top1": 0.452}, n_items=100)
    position = BoardRow("position", {"top1": 0.3}, n_items=100, role="baseline", kind="position")
    contrasts = [_contrast(r.entrant, separates=i < 4) for i, r in enumerate(seeds)] + [_contrast(released.entrant, True)]
    board = _board([position, *seeds, released], contrasts)

    lines = entries(board)
    assert [e.entrant for e in lines] == ["llm-judge all-at-once (gpt-5.5)", "position", "copod · structural"]
    group = lines[2]
    assert group.seeds == (0, 1, 2, 3, 4) and group.members == tuple(r.entrant for r in seeds)
    assert group.metrics["top1"] == pytest.approx(0.44)
    assert group.spreads["top1"].sd == pytest.approx(math.sqrt(0.001))
    assert group.items == "226–244"
    assert group.band.startswith("split: ")  # four seeds above position, one unresolved: no band of its own
    assert contrasts_text(group, ["Top-1 vs position"]) == "4/5"
    assert lines[0].metrics == {"top1": 0.452} and lines[0].items == "100"  # the released row, untouched
    assert contrasts_text(lines[0], ["Top-1 vs position"]) == "separates"

    per_seed = entries(board, group=False)
    assert len(per_seed) == 7 and all(not e.is_group for e in per_seed)
    # Every seed on its own line is named by its detector and seed, its set id kept beside it.
    seed3 = next(e for e in per_seed if e.row == "rescore-ab12-copod-s3")
    assert seed3.entrant == "copod · structural · seed 3" and seed3.metrics["top1"] == 0.46


def test_a_single_seed_is_not_grouped_but_named_by_its_detector():
    """A re-scored set with one seed read 'rescore-74b05d3f-logreg-s0' on the board."""
    row = BoardRow("rescore-ab12-copod-s0", {"top1": 0.4}, n_items=10, seed_group=seed_group(_meta(0)), seed=0)
    (line,) = entries(_board([row]))
    assert (line.entrant, line.row, line.is_group) == ("copod · structural · seed 0", "rescore-ab12-copod-s0", False)


def test_a_set_fit_on_part_of_its_corpus_says_so_in_its_name():
    meta = {**_meta(0), "slice": '{"backbone": ["GPT-4.1"], "corpus": ["maadbench-sim"], "labels": "released"}'}
    assert seed_group(meta).startswith("copod · structural · fit on backbone=GPT-4.1 [")
    reviewed = {**_meta(0), "slice": '{"corpus": ["k"], "difficulty": ["easy", "hard"], "labels": "reviewed"}'}
    assert seed_group(reviewed).startswith("copod · structural · fit on difficulty=easy,hard labels=reviewed [")
    whole = {**_meta(0), "slice": '{"corpus": ["maadbench-sim"]}'}
    assert seed_group(whole).startswith("copod · structural [")


def test_coverage_is_one_line_per_board():
    coverage = [Coverage(f"rescore-ab12-m{i}-s0", n, 1051, True) for i, n in enumerate([226, 244, 230])]
    assert coverage_line(coverage, "failed runs") == (
        "3 re-scored sets score 226–244 of 1,051 failed runs; each rests on its own runs.")
    mixed = coverage + [Coverage("judge x", 100, 1051, False), Coverage("prediction set 'y'", 0, 1051, True)]
    assert coverage_line(mixed, "failed runs") == (
        "3 re-scored sets score 226–244 of 1,051 failed runs; 1 re-scored set scores none of them and is left out; "
        "1 released set scores 100 of 1,051 failed runs; each rests on its own runs.")
    assert coverage_line([], "failed runs") == ""
