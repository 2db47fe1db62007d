"""The views under labels=released|reviewed|agreed against the hand-counted store of labels_store.py."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import labels_store as ls
import queries
from auditatlas.analyses import anomaly_propagation as P
from auditatlas.analyses import detector_comparison as dv
from auditatlas.analyses import labels_in_use
from auditatlas.analyses.board_registry import run_board
from auditatlas.view_state.state_fields import LABELS, shared_of
from auditatlas.views.app_link import parse_link
from auditatlas.views.pages import DETECTORS, OVERVIEW


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory) -> Path:
    return ls.build_reviewed(tmp_path_factory.mktemp("labels") / "store")


def _shared(choice: str) -> dict:
    return {"labels": choice}


def _rates(root: Path, choice: str) -> dict:
    frame = queries.run("action_rates", {"slice": _shared(choice)}, root=root)
    return {r.action: (int(r.labeled_steps), int(r.anomalies), int(r.unlabeled_steps),
                       None if r.success_rate != r.success_rate else round(float(r.success_rate), 6))
            for r in frame.itertuples()}


def test_overview_rates_under_each_label_choice(reviewed):
    assert _rates(reviewed, "released") == {"A": (5, 2, 0, 0.6), "B": (6, 2, 0, round(4 / 6, 6))}
    assert _rates(reviewed, "reviewed") == {"A": (5, 1, 0, 0.8), "B": (6, 4, 0, round(2 / 6, 6))}
    # Under agreed, action A keeps no labeled step: its rate is undefined (NULL), never a number.
    assert _rates(reviewed, "agreed") == {"A": (0, 0, 5, None), "B": (1, 1, 5, 0.0)}


def _cells(root: Path, choice: str) -> dict:
    grid = dv.compute_grid(queries.runner(root), "t", _shared(choice), by_backbone=True)
    return {(r.action, int(r.n_pos), int(r.n_neg)): (None if r.auc != r.auc else round(float(r.auc), 6))
            for r in grid.per_set.itertuples() if r.backbone == "X"}


def test_detectors_grid_cell_auroc_under_each_label_choice(reviewed):
    assert _cells(reviewed, "released") == {("A", 2, 3): round(2 / 6, 6), ("B", 2, 4): 0.875}
    assert _cells(reviewed, "reviewed") == {("A", 1, 4): 1.0, ("B", 4, 2): 1.0}
    # One positive and no negative: the cell is undefined; action A has no labeled test step at all.
    assert _cells(reviewed, "agreed") == {("B", 1, 0): None}


def test_the_undefined_cell_gets_a_sentence(reviewed):
    grid = dv.compute_grid(queries.runner(reviewed), "t", _shared("agreed"), by_backbone=True)
    cell = grid.cells[(grid.cells["backbone"] == "X") & (grid.cells["action"] == "B")].iloc[0]
    assert "no normal" in str(cell["reason"]).lower() or "negative" in str(cell["reason"]).lower()
    assert grid.notes == ["1 action row(s) have no labeled steps in this slice; no ROC-AUC can rest on them."]


def test_an_overall_metric_without_both_classes_is_a_sentence(reviewed):
    query = queries.runner(reviewed)
    assert dv.one_class_note(dv.compute_overall(query, "t", _shared("reviewed")).per_set) is None
    overall = dv.compute_overall(query, "t", _shared("agreed"))  # S1 scores one agreed step, an anomaly
    assert overall.per_set["auc"].isna().all()
    assert dv.one_class_note(overall.per_set) == ("1 of 1 prediction set(s) score no normal step of this slice: "
                                                  "their ROC-AUC and balanced accuracy are undefined (blank), never 0.5.")


def _position(root: Path, choice: str) -> tuple:
    result = run_board("post-localization", queries.runner(root), "t", _shared(choice))
    row = next(r for r in result.rows if r.entrant == "position")
    return result.n_items, tuple(round(row.metrics[m], 6) for m in ("top1", "top3", "mrr"))


def test_localization_board_position_row_under_each_label_choice(reviewed):
    assert _position(reviewed, "released") == (3, (round(1 / 3, 6), round(2 / 3, 6), round(7 / 12, 6)))
    assert _position(reviewed, "reviewed") == (3, (round(1 / 3, 6), 1.0, round(5 / 9, 6)))
    assert _position(reviewed, "agreed") == (1, (0.0, 0.0, 0.25))


def _chains(root: Path, choice: str) -> tuple:
    query = queries.runner(root)
    counts = P.chain_counts(query, _shared(choice))
    lengths = P.chain_lengths(query, _shared(choice))
    origins = sorted(lengths["origin_action"]) if len(lengths) else []
    return int(counts["chains"].sum()), origins


def test_propagation_chains_recomputed_from_the_chosen_labels(reviewed):
    assert _chains(reviewed, "released") == (1, ["A"])
    assert _chains(reviewed, "reviewed") == (2, ["A", "B"])
    assert _chains(reviewed, "agreed") == (0, [])


def test_chain_roles_and_run_counts_follow_the_choice(reviewed):
    def run_a(choice):
        steps = queries.run("explorer_steps", {"run": "t:a", "labels": choice}, root=reviewed)
        roles = [None if pd.isna(r) else r for r in steps["chain_role"]]
        return [None if pd.isna(v) else int(v) for v in steps["label"]], roles

    assert run_a("released") == ([0, 1, 1, 0], [None, "origin", "down", None])
    assert run_a("reviewed") == ([1, 0, 1, 0], ["origin", None, "down", None])
    assert run_a("agreed") == ([None] * 4, [None] * 4)
    runs = queries.run("explorer_runs_count", _runs_count_params("reviewed", min_chain=2), root=reviewed)
    assert int(runs["total"].iloc[0]) == 2  # t:a and t:b hold a chain under reviewed (t:a alone as released)


def _runs_count_params(choice: str, min_chain: int) -> dict:
    return {"slice": _shared(choice), "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [],
            "f_difficulty": [], "f_outcome": [], "min_steps": None, "max_steps": None, "min_anomalous": None,
            "max_anomalous": None, "min_chain": min_chain, "max_chain": None}


def test_caption_says_which_labels_and_how_many_steps_were_reviewed(reviewed):
    query = queries.runner(reviewed)
    assert labels_in_use.caption_for(query, _shared("reviewed")) == \
        "Labels: reviewed (7 steps reviewed, 5 changed, 1 unsure kept as released)."
    assert labels_in_use.caption_for(query, _shared("agreed")) == \
        "Labels: agreed (7 steps reviewed, 1 agree with the release; every other step counts as unlabeled)."
    assert labels_in_use.caption_for(query, {}).startswith("Labels: released (7 steps reviewed, 5 of them")
    # A slice the verdicts do not reach says so.
    assert labels_in_use.caption_for(query, {"backbone": ["nope"]}) == "Labels: released (no step of this slice reviewed)."


def test_a_new_verdict_is_read_by_the_next_query(reviewed, tmp_path):
    import shutil

    from auditatlas import verdicts

    root = tmp_path / "copy"
    shutil.copytree(reviewed, root, ignore=shutil.ignore_patterns("derived"))
    assert _rates(root, "reviewed")["A"] == (5, 1, 0, 0.8)
    verdicts.append_verdicts(root, [verdicts.verdict("t", "t:b", 0, "anomaly", "rev2")])
    assert _rates(root, "reviewed")["A"] == (5, 2, 0, 0.6)
    assert _rates(root, "released")["A"] == (5, 2, 0, 0.6)  # b0 released 0, a1 released 1: same counts


def test_labels_round_trip_through_the_url():
    url = DETECTORS.url({"backbone": ["X"], "labels": "reviewed"}, {"tab": "Overall"})
    assert url == "/detectors?backbone=X&labels=reviewed&tab=Overall"
    # The released labels are the default: a link leaves them out.
    assert OVERVIEW.url({"labels": "released"}) == "/"
    link = parse_link(url)
    assert link.slice["labels"] == "reviewed" and link.slice["backbone"] == ["X"]
    assert link.app_link == url
    assert link.problems == []


def test_a_bad_label_choice_is_one_sentence_and_the_released_labels():
    link = parse_link("/?labels=mine")
    assert link.slice["labels"] == "released"
    assert link.problems == ["The link's labels 'mine' is not one of released, reviewed, agreed; using released."]
    assert shared_of({"labels": ["agreed"]})["labels"] == "agreed"
    assert LABELS.default == "released"


def test_an_unknown_label_choice_is_refused_by_the_query_layer(reviewed):
    with pytest.raises(ValueError, match="labels 'mine' is not one of released, reviewed, agreed"):
        queries.run("action_rates", {"slice": {"labels": "mine"}}, root=reviewed)


def test_the_sidebar_choice_the_caption_and_a_bad_link_value(reviewed, monkeypatch):
    """One session, two runs (a run of the app is most of an AppTest's cost): a link with a label
    choice that is none, then one with a choice (the sidebar's radio is bound to the URL)."""
    from streamlit.testing.v1 import AppTest

    from app_support import badge_texts, page_texts
    from conftest import REPO

    monkeypatch.setenv("AUDITATLAS_STORE", str(reviewed))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.query_params["labels"] = "mine"
    at.run()  # the Overview, the default page
    assert not at.exception, at.exception
    assert [_plain(w.value) for w in at.warning] == [
        "The link's labels 'mine' is not one of released, reviewed, agreed; using released."]
    assert badge_texts(at)[-1].startswith("Labels: released (7 steps reviewed, 5 of them to another label")
    assert "3 runs, 11 steps, 11 labeled" in page_texts(at)
    at.query_params["labels"] = "agreed"  # (AppTest drops a bound widget's first set_value)
    at.run()
    assert at.sidebar.radio(key="labels").value == "agreed"
    assert not at.warning, [w.value for w in at.warning]  # a choice is shown: the old link's request is answered
    assert badge_texts(at)[-1] == ("Labels: agreed (7 steps reviewed, 1 agree with the release; every other step "
                                   "counts as unlabeled).")
    assert "3 runs, 11 steps, 1 labeled" in page_texts(at)  # the Overview's slice line under agreed


# Reviewed labels per step (labels_store.py), for the views built from caches of released labels.
REVIEWED = {("t:a", 0): 1, ("t:a", 1): 0, ("t:a", 2): 1, ("t:a", 3): 0, ("t:b", 0): 0, ("t:b", 1): 0, ("t:b", 2): 1,
            ("t:b", 3): 1, ("t:c", 0): 0, ("t:c", 1): 0, ("t:c", 2): 1}


def test_search_follows_the_label_choice(reviewed):
    from auditatlas.search.answer import SearchRequest, search
    from queries.search import index_for

    index = index_for(reviewed, wait=True).index
    query = queries.runner(reviewed)

    def hits(choice, label):
        answer = search(SearchRequest("out", {"labels": choice}, label, page_size=50), index, query)
        return answer, {(h.run_id, h.step_idx): h.label for h in answer.hits}

    answer, found = hits("released", "anomaly")
    assert answer.ranked and set(found) == {("t:a", 1), ("t:a", 2), ("t:b", 3), ("t:c", 0)}
    answer, found = hits("reviewed", "anomaly")  # the index holds released labels: the scan answers, and says so
    assert not answer.ranked and "reads the reviewed labels" in answer.note
    assert set(found) == {k for k, v in REVIEWED.items() if v == 1}
    answer, found = hits("reviewed", "any")  # ranked, each hit labeled as reviewed
    assert answer.ranked and found == {k: "anomaly" if v else "normal" for k, v in REVIEWED.items()}
    answer, found = hits("agreed", "anomaly")
    assert set(found) == {("t:b", 3)}


def test_patterns_follow_the_label_choice(reviewed):
    from auditatlas.errors import AtlasError
    from auditatlas.patterns import clusters, similar, vectors

    query = queries.runner(reviewed)
    found = vectors.load(reviewed, query)
    near = similar.similar_steps(found, query, "t:a", 0, {"labels": "reviewed"}, k=10)
    assert near.anchor["label"] == 1
    assert {(r, s): int(v) for r, s, v in near.neighbours[["run_id", "step_idx", "label"]].itertuples(index=False)} == \
        {k: v for k, v in REVIEWED.items() if k != ("t:a", 0)}
    result = clusters.failure_clusters(found, query, {"labels": "reviewed"}, n_clusters=2)
    assert sorted((r, int(s)) for r, s in result.members[["run_id", "step_idx"]].itertuples(index=False)) == \
        sorted(k for k, v in REVIEWED.items() if v == 1)
    assert set(result.members["label"]) == {1.0}
    with pytest.raises(AtlasError, match="fewer than the 2 clusters"):  # one agreed anomaly (t:b 3)
        clusters.failure_clusters(found, query, {"labels": "agreed"}, n_clusters=2)


def test_without_any_verdict_reviewed_is_released_and_agreed_holds_no_label(tmp_path):
    root = ls.build(tmp_path / "store")  # no reviews source at all
    assert _rates(root, "reviewed") == _rates(root, "released")
    assert _rates(root, "agreed") == {"A": (0, 0, 5, None), "B": (0, 0, 6, None)}
    assert labels_in_use.caption_for(queries.runner(root), _shared("reviewed")) == \
        "Labels: reviewed (0 steps reviewed, 0 changed)."


def test_an_orphaned_verdict_changes_no_label(tmp_path):
    from auditatlas import verdicts

    root = ls.build(tmp_path / "store")
    verdicts.append_verdicts(root, [verdicts.verdict("t", "t:a", 9, "anomaly", "rev"),  # t:a has 4 steps
                                   verdicts.verdict("t", "t:gone", 0, "anomaly", "rev")])
    assert _rates(root, "reviewed") == _rates(root, "released")
    assert labels_in_use.caption_for(queries.runner(root), _shared("reviewed")) == \
        "Labels: reviewed (0 steps reviewed, 0 changed)."


def test_the_board_command_scores_under_the_label_choice(reviewed):
    import json

    from cli_support import run_cli

    done = run_cli("--store", str(reviewed), "board", "post-localization", "--corpus", "t", "--labels", "agreed")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[POST] POST localization") and "(1 failed runs" in lines[0]
    assert lines[1] == "Labels: agreed (7 steps reviewed, 1 agree with the release; every other step counts as unlabeled)."
    assert lines[2].startswith("note: Recomputed under the agreed labels; the published values rest on the released")
    done = run_cli("--store", str(reviewed), "board", "post-localization", "--corpus", "t", "--labels", "reviewed", "--json")
    data = json.loads(done.stdout)
    assert data["labels"] == "reviewed" and data["n_items"] == 3


def test_the_export_says_which_labels_and_computes_under_them(reviewed):
    from auditatlas.export import export_view

    done = export_view(queries.runner(reviewed), reviewed, "/?labels=agreed")
    assert done.link.app_link == "/?labels=agreed"
    assert "Labels: agreed (7 steps reviewed, 1 agree with the release; every other step counts as unlabeled)." in done.html
    assert "3 runs, 11 steps, 1 labeled" in done.html


def test_rescoring_reads_the_chosen_labels(reviewed):
    from auditatlas.detectors import engine
    from auditatlas.errors import UndefinedMetric

    counts = {c: engine.slice_corpora(queries.runner(reviewed), _shared(c))[0] for c in ("released", "reviewed", "agreed")}
    assert [(counts[c]["positives"], counts[c]["negatives"], counts[c]["unlabeled"]) for c in counts] == \
        [(4, 7, 0), (5, 6, 0), (1, 0, 10)]
    # Under agreed no normal step is left: nothing can be fitted, and the reason is one sentence.
    with pytest.raises(UndefinedMetric, match="no normal step among its 1 labeled ones"):
        engine.score(reviewed, ["random"], _shared("agreed"), 1)


def test_boards_whose_truth_is_no_step_label_say_so():
    assert labels_in_use.board_note({}, "step") is None
    assert labels_in_use.board_note(_shared("reviewed"), "run") == (
        "This board's truth is run outcomes, which no step verdict changes: it is the same under every label choice.")
    assert "capability labels" in labels_in_use.board_note(_shared("agreed"), "config")


def _plain(markdown: str) -> str:
    """A sentence drawn through components.safe.md, as the reader sees it."""
    return markdown.replace("\\", "").replace("\u2060", "")
