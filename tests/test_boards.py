"""Boards regenerate the published numbers from the store (values typed from the golden board
and specs/catchbench.md, never computed by the code under test)."""
from __future__ import annotations

import numpy as np
import pytest

from auditatlas.analyses.board_published import missing_blocks, reconcile
from auditatlas.analyses.board_registry import board_json, run_board
from auditatlas.errors import AtlasError
from auditatlas.ingest import ingest
from conftest import WHOWHEN
from queries import runner

PRE_PUBLISHED = {  # entrant: (precision, recall, f1, coverage)
    "flag_all": (0.430, 1.000, 0.601, 1.000),
    "flag_none": (0.000, 0.000, 0.000, 1.000),
    "oracle_privilege_diff": (1.000, 1.000, 1.000, 1.000),
    "llm_judge_needed(llama-3.3-70b)": (0.594, 0.839, 0.695, 0.996),
}
POST_PUBLISHED = {  # entrant: (top1, top3, mrr), from the golden board
    "random": (0.119, 0.346, 0.324),
    "position": (0.159, 0.516, 0.407),
    "llm-judge all-at-once (claude-opus-4.8)": (0.421, 0.698, 0.605),
    "llm-judge all-at-once (deepseek-r1)": (0.405, 0.754, 0.606),
    "llm-judge all-at-once (gemini)": (0.357, 0.722, 0.572),
    "llm-judge all-at-once (gemma-3-12b)": (0.206, 0.524, 0.427),
    "llm-judge all-at-once (gpt-5.4)": (0.413, 0.714, 0.601),
    "llm-judge all-at-once (gpt-5.5)": (0.452, 0.667, 0.618),
    "llm-judge all-at-once (gpt-oss-20b)": (0.333, 0.595, 0.521),
    "llm-judge all-at-once (llama-3.3-70b)": (0.333, 0.579, 0.515),
    "llm-judge all-at-once (mistral-small)": (0.135, 0.421, 0.363),
    "llm-judge all-at-once (nova-micro)": (0.127, 0.397, 0.342),
    "llm-judge all-at-once (qwen3-32b)": (0.349, 0.659, 0.541),
    "llm-judge binary-search (claude-opus-4.8)": (0.357,) * 3,
    "llm-judge binary-search (deepseek-r1)": (0.405,) * 3,
    "llm-judge binary-search (gemini)": (0.357,) * 3,
    "llm-judge binary-search (gemma-3-12b)": (0.159,) * 3,
    "llm-judge binary-search (gpt-5.4)": (0.365,) * 3,
    "llm-judge binary-search (gpt-5.5)": (0.421,) * 3,
    "llm-judge binary-search (llama-3.3-70b)": (0.222,) * 3,
    "llm-judge binary-search (mistral-small)": (0.214,) * 3,
    "llm-judge binary-search (nova-micro)": (0.167,) * 3,
    "llm-judge binary-search (qwen3-32b)": (0.127,) * 3,
    "llm-judge step-by-step (claude-opus-4.8)": (0.389,) * 3,
    "llm-judge step-by-step (deepseek-r1)": (0.317,) * 3,
    "llm-judge step-by-step (gemini)": (0.341,) * 3,
    "llm-judge step-by-step (gemma-3-12b)": (0.230,) * 3,
    "llm-judge step-by-step (gpt-5.4)": (0.381,) * 3,
    "llm-judge step-by-step (gpt-5.5)": (0.397,) * 3,
    "llm-judge step-by-step (llama-3.3-70b)": (0.222,) * 3,
    "llm-judge step-by-step (mistral-small)": (0.190,) * 3,
    "llm-judge step-by-step (nova-micro)": (0.167,) * 3,
    "llm-judge step-by-step (qwen3-32b)": (0.254,) * 3,
}


@pytest.fixture(scope="module")
def catch_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("boards")
    ingest("catchbench", None, root)
    return root


@pytest.fixture(scope="module")
def whowhen_store(catch_store):
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen")
    ingest("whowhen", WHOWHEN, catch_store)
    return catch_store


# Each board computed once for the tests that only read it.
@pytest.fixture(scope="module")
def pre_board(catch_store):
    return run_board("pre", runner(catch_store))


@pytest.fixture(scope="module")
def localization_board(whowhen_store):
    return run_board("post-localization", runner(whowhen_store), "whowhen")


def test_pre_board_reproduces_published_rows(pre_board):
    result = pre_board
    rows = {r.entrant: r.metrics for r in result.rows}
    for entrant, values in PRE_PUBLISHED.items():
        got = tuple(round(rows[entrant][m], 3) for m in ("precision", "recall", "f1", "coverage"))
        assert got == values, entrant
    assert result.n_items == 1187 and result.floor == "flag_all"


def test_pre_rules_and_per_source_cells_match_the_golden_board(catch_store, pre_board):
    result = pre_board
    cells = reconcile(result, runner(catch_store))
    assert len(cells) == 110  # 11 entrants x (4 pooled metrics + 6 sources)
    assert all(c.matches for c in cells), [(c.entrant, c.corpus, c.metric) for c in cells if not c.matches]


def test_pre_f1_by_source_carries_each_sources_own_cluster_bootstrap(catch_store, pre_board):
    """Each source's F1 with its 95% interval: the published value inside it, the oracle's
    [1, 1], and flag_all's n8n interval against a bootstrap written out here from the store's
    own rows (n8n's configurations drawn whole; flag_all flags every capability, so a
    configuration's true positives are its excess capabilities and its false positives the rest)."""
    import numpy as np

    from auditatlas.figures.boards import extra_frame
    from queries import connect

    result = pre_board
    rows = {r["entrant"]: r for r in result.extra_tables["f1_by_source"]}
    cells = [c for c in reconcile(result, runner(catch_store)) if c.metric == "f1" and c.corpus != result.corpus]
    assert len(cells) == 66  # 11 entrants x 6 sources
    for c in cells:
        low, high = rows[c.entrant][f"{c.corpus} 95% low"], rows[c.entrant][f"{c.corpus} 95% high"]
        assert 0 <= low <= c.published + 0.0005 and c.published - 0.0005 <= high <= 1, (c.entrant, c.corpus, low, high)
    oracle = rows["oracle_privilege_diff"]
    assert all(oracle[f"{s} 95% low"] == oracle[f"{s} 95% high"] == 1.0 for s in ("crewai", "n8n", "mcp", "overall"))
    assert (rows["flag_all"]["overall 95% low"], rows["flag_all"]["overall 95% high"]) == \
        tuple(next(r for r in result.rows if r.entrant == "flag_all").intervals["f1"])

    con = connect(catch_store)
    per_config = con.execute("""
        SELECT sum(c.excess::INT), sum((NOT c.excess)::INT) FROM capabilities c JOIN configs g USING (corpus, config_id)
        WHERE g.config_source = 'n8n' GROUP BY config_id ORDER BY config_id""").fetchall()
    con.close()
    tp, fp = (np.array(col, dtype=float) for col in zip(*per_config))
    draws = np.random.default_rng(0).integers(0, len(tp), size=(1000, len(tp)))
    f1 = [2 * tp[d].sum() / (2 * tp[d].sum() + fp[d].sum()) for d in draws]
    expected = np.quantile(f1, [0.025, 0.975])
    assert [rows["flag_all"]["n8n 95% low"], rows["flag_all"]["n8n 95% high"]] == pytest.approx(list(expected))

    shown, download = extra_frame(result.extra_tables["f1_by_source"])
    line = shown.set_index("entrant").loc["flag_all"]
    assert line["n8n"] == 0.154 and line["n8n 95%"] == f"[{expected[0]:.3f}, {expected[1]:.3f}]"
    assert list(shown.columns[:3]) == ["entrant", "crewai", "crewai 95%"]
    assert download.set_index("entrant").loc["flag_all", "n8n 95% low"] == pytest.approx(expected[0])
    assert "over that source's configurations only" in result.extra_captions["f1_by_source"]


def test_pre_judge_contrast_separates_from_floor(pre_board):
    result = pre_board
    judge = next(c for c in result.contrasts if c.a_name == "llm_judge_needed(llama-3.3-70b)")
    assert judge.b_name == "flag_all" and judge.verdict == "separates"
    assert judge.diff == pytest.approx(0.695 - 0.601, abs=0.001)
    assert judge.ci_low > 0


def test_post_localization_reproduces_all_published_rows(localization_board):
    result = localization_board
    assert result.n_items == 126
    rows = {r.entrant: r.metrics for r in result.rows}
    for entrant, values in POST_PUBLISHED.items():
        got = tuple(round(rows[entrant][m], 3) for m in ("top1", "top3", "mrr"))
        assert got == pytest.approx(values, abs=0.0005), entrant
    addenda = [r for r in result.rows if r.entrant.endswith("[addendum]")]
    assert len(addenda) == 12 and all(r.role == "extra" for r in addenda)


def test_post_localization_json_uses_board_spelling(localization_board):
    data = board_json(localization_board)
    assert data["board"] == "post-localization" and data["corpus"] == "whowhen" and data["n_items"] == 126
    row = next(r for r in data["rows"] if r["entrant"] == "llm-judge all-at-once (gpt-5.5)")
    assert set(row) == {"entrant", "top1", "top3", "mrr", "intervals", "role", "n_items", "seed_group", "seed"}
    assert row["top1"] == pytest.approx(0.452, abs=0.0005)
    for metric, published in zip(("top1", "top3", "mrr"), POST_PUBLISHED["llm-judge all-at-once (gpt-5.5)"]):
        low, high = row["intervals"][metric]
        assert 0 <= low < published < high <= 1, metric
    assert data["interval_methods"]["top1"].startswith("Clopper-Pearson") and "bootstrap" in data["interval_methods"]["mrr"]
    assert data["seed_groups"] == [] and row["role"] == "entrant" and row["n_items"] == 126


def test_missing_blocks_name_the_corpora_they_need(catch_store):
    blocks = {(b["board"], b["corpus"]) for b in missing_blocks(runner(catch_store))}
    assert ("post-detection", "swegym") in blocks and ("post-detection", "tau") in blocks
    assert not any(corpus in ("whowhen", "catchbench-pre") for _, corpus in blocks)


def test_unknown_board_and_corpus_are_one_sentence(catch_store):
    with pytest.raises(AtlasError, match="unknown board 'nope'"):
        run_board("nope", runner(catch_store))
    with pytest.raises(AtlasError, match="cannot be computed on corpus 'whowhen'"):
        run_board("pre", runner(catch_store), "whowhen")


def test_contrast_families_pick_rows_by_role_and_kind_not_by_name():
    """A family contrasts the rows its roles (and kinds) admit against the first row holding its
    ``against`` role, whatever the rows are called; a row without per-item values is skipped."""
    import numpy as np

    from auditatlas.analyses.board_registry import BoardRow, ContrastFamily, contrasts_for
    from auditatlas.analyses.entrant import Entrant
    from auditatlas.stats import Contrast

    items = {"x": np.arange(3.0)}
    rows = [BoardRow("coin", {}, items, role="floor", kind="random"),
            BoardRow("length only", {}, items, role="baseline", kind="size"),
            BoardRow("graph model", {}, items, role="entrant", kind="structure"),
            BoardRow("outliers", {}, items, role="entrant", kind="outlier detector"),
            BoardRow("judge set", {}, items, role="extra", kind="prediction set"),
            BoardRow("expectation", {}, {}, role="extra", kind="expectation")]
    families = [ContrastFamily("vs floor", "m", "t", against="floor", members=("baseline", "entrant", "extra")),
                ContrastFamily("beyond size", "m", "t", against="baseline", members=("entrant",), kinds=("structure",))]
    seen = []

    def test(fam, a, b):
        seen.append((fam.name, a.entrant, b.entrant))
        return Contrast(fam.name, a.entrant, b.entrant, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, "t")

    contrasts_for(rows, families, {"t": test})
    assert seen == [("vs floor", "length only", "coin"), ("vs floor", "graph model", "coin"),
                    ("vs floor", "outliers", "coin"), ("vs floor", "judge set", "coin"),
                    ("beyond size", "graph model", "length only")]
    with pytest.raises(ValueError, match="role must be one of"):
        Entrant("x", role="champion")


def test_the_leader_family_contrasts_every_member_with_the_best_row_and_names_the_top_group():
    """Who wins: the member row with the best value of the family's metric is the leader; the top
    group is the leader and every row whose Holm-adjusted contrast against it does not separate;
    a row the test could not pair is named apart, in neither."""
    import numpy as np

    from auditatlas.analyses.board_types import LEADER, BoardResult, BoardRow, ContrastFamily, contrasts_for, top_group
    from auditatlas.stats import Contrast

    items = {"x": np.arange(3.0)}
    rows = [BoardRow("coin", {"m": 0.50}, items, role="floor"),
            BoardRow("a", {"m": 0.70}, items), BoardRow("b", {"m": 0.90}, items),
            BoardRow("c", {"m": 0.88}, items), BoardRow("d", {"m": 0.60}, items),
            BoardRow("e", {"m": 0.89}, items, role="extra"),
            BoardRow("no items", {"m": 0.99}, {}, role="extra")]  # not pairable: never the leader
    family = ContrastFamily("vs the leader", "m", "t", against=LEADER, members=("entrant", "extra"))
    p_values = {"a": 0.001, "c": 0.30, "d": 0.0001, "e": float("nan")}

    def test(fam, a, b):
        return Contrast(fam.name, a.entrant, b.entrant, a.metrics["m"], b.metrics["m"],
                        a.metrics["m"] - b.metrics["m"], 0.0, 0.0, p_values[a.entrant], "t")

    contrasts = contrasts_for(rows, [family], {"t": test})
    assert {c.b_name for c in contrasts} == {"b"}
    assert [c.a_name for c in contrasts] == ["a", "c", "d", "e"]  # the floor is not a member
    result = BoardResult("x", "X", "POST", "k", ("m",), "coin", 3, "runs", rows, contrasts,
                         primary_metric="m", leader_family="vs the leader")
    found = top_group(result)
    assert (found.leader, found.members, found.untested) == ("b", ("b", "c"), ("e",))


def test_post_detection_pairs_a_rescored_set_with_the_floor_on_the_runs_both_score():
    """A re-scored set scores its test runs only; it was listed 'not tested' against random (and
    below it, whatever its ROC-AUC). Now it is tested on the runs both score, and the board names
    its top group."""
    from auditatlas.analyses.board_types import top_group
    from stores import shared_store

    result = run_board("post-detection", runner(shared_store("app")), "maadbench-sim")
    by_name = {r.entrant: r for r in result.rows}
    sets = [r for r in result.rows if r.seed_group is not None]
    assert sets, "the shared app store holds a re-scored panel"
    vs_floor = {c.a_name: c for c in result.contrasts if c.family == result.primary_contrast_family}
    for row in sets:
        c = vs_floor[row.entrant]
        assert np.isfinite(c.p), (row.entrant, c.test)
        assert "runs both score" in c.test
        n_common = int(c.test.split("the ")[1].split(" runs")[0].replace(",", ""))
        assert 0 < n_common == row.n_items < by_name[result.floor].n_items
    best = max(sets, key=lambda r: r.metrics["roc_auc"])
    assert best.metrics["roc_auc"] > 0.75 and vs_floor[best.entrant].verdict == "separates"
    found = top_group(result)
    assert found is not None and found.leader in by_name
    assert by_name[found.leader].metrics["roc_auc"] == max(
        r.metrics["roc_auc"] for r in result.rows if r.role != "floor" and r.metrics["roc_auc"] is not None)
    data = board_json(result)
    assert data["top_group"]["leader"] == found.leader and found.leader in data["top_group"]["members"]


def test_the_leader_sentence_names_a_seed_set_by_its_detector_and_seed_not_its_id():
    """A re-scored detector's seeds are one line ("logreg · structural"); its best seed leads the
    top group, and the sentence names that line and the seed, as the table does, never the set id."""
    import numpy as np

    from auditatlas.analyses.board_types import LEADER, BoardResult, BoardRow, ContrastFamily, contrasts_for
    from auditatlas.stats import Contrast
    from auditatlas.views.boards_view import top_group_blocks

    items = {"x": np.arange(3.0)}
    group = "logreg · structural [rescore-5ec8a910]"
    rows = [BoardRow("coin", {"m": 0.50}, items, role="floor"),
            BoardRow("rescore-5ec8a910-logreg-s0", {"m": 0.80}, items, seed_group=group, seed=0),
            BoardRow("rescore-5ec8a910-logreg-s2", {"m": 0.90}, items, seed_group=group, seed=2),
            BoardRow("hbos (released)", {"m": 0.70}, items)]
    family = ContrastFamily("vs the leader", "m", "t", against=LEADER, members=("entrant",))

    def test(fam, a, b):
        return Contrast(fam.name, a.entrant, b.entrant, a.metrics["m"], b.metrics["m"],
                        a.metrics["m"] - b.metrics["m"], 0.0, 0.0, 0.5, "t")

    result = BoardResult("x", "X", "POST", "k", ("m",), "coin", 3, "runs", rows, contrasts_for(rows, [family], {"t": test}),
                         primary_metric="m", leader_family="vs the leader")
    sentence = top_group_blocks(result)[1].format(str)
    assert sentence.startswith("The leader, logreg · structural, seed 2 (m 0.900)") and "rescore-" not in sentence


def test_random_ranks_follow_the_pooled_draw_run_by_run():
    """The published floor's ranks, worked by hand: RandomState(0).rand(5) is 0.549, 0.715,
    0.603 | 0.545, 0.424; run one's truth (its step 0, 0.549) has two steps above it, run two's
    (its step 1, 0.424) one."""
    from auditatlas.analyses.board_localization import random_ranks

    assert random_ranks(np.array([3, 2]), np.array([0, 1]), 0).tolist() == [3.0, 2.0]
    assert random_ranks(np.array([1, 4]), np.array([0, 3]), 0).tolist() == [1.0, 4.0]  # a lone step is first
