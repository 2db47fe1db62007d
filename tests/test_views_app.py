"""Hostile links on the real pages (AppTest, a 40-room store with three detectors' sets):
every value a page cannot use is reported in one warning sentence naming the parameter and
the value, on the first run and after Streamlit has dropped it from the URL."""
from __future__ import annotations

from pathlib import Path

import pytest

from app_support import open_page


def _plain(markdown: str) -> str:
    """A warning as the reader sees it (components.safe.md escapes with backslashes and word joiners)."""
    return markdown.replace("\\", "").replace("\u2060", "")


@pytest.fixture(scope="module")
def small_store() -> Path:
    """A 40-room default store without the panel, plus three known sets (read only)."""
    from stores import shared_store

    return shared_store("views-small")


def _warnings(at) -> list[str]:
    return [_plain(w.value) for w in at.warning]


DETECTORS_LINK = {"rule": "bogus", "top_pct": "abc", "tab": "Nope", "metric": "x", "threshold": "top_k",
                  "detector": "no-such-detector", "detectors_corpus": "nowhere"}
DETECTORS_SENTENCES = [
    "The link's rule 'bogus' is neither own nor top_pct; using own.",
    "The link's top_pct 'abc' is not a number from 0.5 to 100.0; using 10.0.",
    "The link's tab 'Nope' is not one of AUROC grid, Overall, Cost, Prediction sets; using AUROC grid.",
    "The link's metric 'x' is not one of ROC-AUC, F1, accuracy, balanced accuracy, recall on silent anomalies, "
    "recall on loud anomalies; using ROC-AUC.",
    "The link's threshold 'top_k' is not a parameter of this page (/detectors); ignored.",
    "The link asks for detector 'no-such-detector', which this view does not hold here; showing 'iforest · basic' "
    "instead.",
    "The link asks for corpus 'nowhere', which this view does not hold here; showing 'maadbench-sim' instead.",
]


def test_detectors_reports_every_value_it_cannot_use(small_store, monkeypatch):
    at = open_page(small_store, monkeypatch, "pages/detectors.py", **DETECTORS_LINK)
    warnings = _warnings(at)
    for sentence in DETECTORS_SENTENCES:
        assert sentence in warnings, warnings
    assert at.radio(key="rule").value == "own" and at.number_input(key="top_pct").value == 10.0
    at.run()  # Streamlit has dropped the bound values from the URL by now: the page still says so
    assert not at.exception, at.exception
    for sentence in DETECTORS_SENTENCES:
        assert sentence in _warnings(at), _warnings(at)


def test_detectors_honours_a_valid_link(small_store, monkeypatch):
    at = open_page(small_store, monkeypatch, "pages/detectors.py", rule="top_pct", top_pct="20", tab="Overall",
                   metric="F1")
    assert not at.warning, _warnings(at)
    assert at.radio(key="rule").value == "top_pct" and at.number_input(key="top_pct").value == 20.0
    assert at.selectbox(key="metric").value == "F1"


RESCORE_LINK = {"rescore_seeds": "abc", "rescore_detectors": ["iforest", "nope"], "rescore_feature_set": "zz",
                "cross_seeds": "9", "cross_corpus": "nowhere"}
RESCORE_SENTENCES = [
    "The link's rescore_seeds 'abc' is not a whole number from 1 to 10; using 1.",
    "The link's rescore_detectors 'nope' is not one of random, iforest, knn, lof, ecod, copod, hbos, ocsvm, logreg, "
    "random-forest, hist-gb; left out.",
    "The link's rescore_feature_set 'zz' is neither structural nor structural+text; using structural.",
    "The link's cross_seeds '9' is not a whole number from 1 to 5; using 1.",
    "The link asks for corpus 'nowhere', which this view does not hold here; showing 'maadbench-sim' instead.",
]


def test_rescore_reports_every_value_it_cannot_use(small_store, monkeypatch):
    at = open_page(small_store, monkeypatch, "pages/rescore.py", **RESCORE_LINK)
    for sentence in RESCORE_SENTENCES:
        assert sentence in _warnings(at), _warnings(at)
    assert at.number_input(key="rescore_seeds").value == 1
    assert at.multiselect(key="rescore_detectors").value == ["iforest"]
    at.run()
    for sentence in RESCORE_SENTENCES:
        assert sentence in _warnings(at), _warnings(at)


def test_rescore_honours_a_valid_link(small_store, monkeypatch):
    at = open_page(small_store, monkeypatch, "pages/rescore.py", rescore_seeds="3", rescore_detectors="lof",
                   cross_seeds="2")
    assert not at.warning, _warnings(at)
    assert at.number_input(key="rescore_seeds").value == 3
    assert at.multiselect(key="rescore_detectors").value == ["lof"]


@pytest.mark.parametrize("page, params, sentence", [
    ("pages/overview.py", {"top_k": "5"}, "The link's top_k '5' is not a parameter of this page (/); ignored."),
    ("pages/boards.py", {"tab": "MID"}, "The link's tab 'MID' is not one of PRE, LIVE, POST; using PRE."),
    ("pages/propagation.py", {"cell_page": "0", "tab": "Chains", "length": "3"},
     "The link's cell_page '0' is not a whole number ≥ 1; using 1."),
    ("pages/propagation.py", {"tab": "Chains", "origin": "NO_SUCH_ACTION"},
     "The link asks for origin action 'NO_SUCH_ACTION', which this view does not hold here; left out."),
    ("pages/explorer.py", {"step": "abc"}, "The link's step 'abc' is not a step number (0, 1, 2, …); no step is open."),
])
def test_every_page_reports_the_same_way(small_store, monkeypatch, page, params, sentence):
    at = open_page(small_store, monkeypatch, page, **params)
    assert sentence in _warnings(at), _warnings(at)


def test_a_link_value_the_reader_changes_is_no_longer_reported(small_store, monkeypatch):
    """The warning names what the link asked for until the reader chooses for themselves; a valid
    link value the reader then sets back to the default is not reported either."""
    at = open_page(small_store, monkeypatch, "pages/detectors.py", detector="no-such-detector")
    options = at.selectbox(key="grid_backbone").options
    assert any("detector 'no-such-detector'" in w for w in _warnings(at))
    at.selectbox(key="detector").set_value("random").run()
    assert not any("no-such-detector" in w for w in _warnings(at)), _warnings(at)

    at = open_page(small_store, monkeypatch, "pages/detectors.py", grid_backbone=options[1])
    assert at.selectbox(key="grid_backbone").value == options[1] and not at.warning
    at.selectbox(key="grid_backbone").set_value(options[0]).run()
    assert at.selectbox(key="grid_backbone").value == options[0]
    assert not at.warning, _warnings(at)


def test_a_tables_key_column_is_wide_enough_for_its_longest_key():
    """The grid sizes a column to about 190 px: a board's entrant 'llm_judge_needed(llama-3.3-70b)'
    was cut in its pinned key column. A long key gets the width it needs (capped), a short one
    the grid's own, and a width the page set stays."""
    import pandas as pd

    from components.tables import pinned_keys

    long_keys = pd.DataFrame({"entrant": ["llm_judge_needed(llama-3.3-70b)", "random", None], "f1": [0.7, 0.5, 0.1]})
    config = pinned_keys(long_keys)
    assert config["entrant"]["pinned"] and 240 <= config["entrant"]["width"] <= 420
    assert "f1" not in config
    assert pinned_keys(pd.DataFrame({"action": ["SC · SOLVE_CLUE"]}))["action"] == {"pinned": True}
    assert pinned_keys(pd.DataFrame({"entrant": ["x" * 500]}))["entrant"]["width"] <= 420
    assert pinned_keys(long_keys, {"entrant": {"width": "small"}})["entrant"]["width"] == "small"
