"""AppTest for the re-score page: it runs, re-scores the slice into the store, refuses a slice
without anomalies with one sentence, says a cancelled run wrote nothing, and draws the
cross-backbone matrix."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from auditatlas.detectors.registry import engine_detectors
from auditatlas.store import read_manifest
from conftest import REPO

PAGE = "pages/rescore.py"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A private copy of 200 simulated rooms plus the authored toy corpus (whose backbone C has
    no anomaly): the page writes into it; the build is the session's (tests/stores.py)."""
    from stores import copy_of

    return copy_of("rescore-app", tmp_path_factory.mktemp("rescore-app") / "store")


def _open(store: Path, monkeypatch, **params) -> AppTest:
    monkeypatch.setenv("AUDITATLAS_STORE", str(store))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at) -> str:
    parts = [m.value for m in at.markdown] + [t.value for t in at.title] + [s.value for s in at.subheader]
    parts += [c.value for c in at.caption] + [i.value for i in at.info] + [w.value for w in at.warning]
    parts += [s.value for s in at.success]
    return "\n".join(str(p) for p in parts)


def _rescore_sources(store: Path) -> set[str]:
    return {name for name in read_manifest(store)["sources"] if name.startswith("rescore-")}


def test_page_runs_and_offers_the_registry(store, monkeypatch):
    at = _open(store, monkeypatch, corpus="maadbench-sim")
    assert "Re-score" in [t.value for t in at.title]
    picker = at.multiselect(key="rescore_detectors")
    assert picker.options == list(engine_detectors())  # the registry, in its order
    assert at.selectbox(key="rescore_feature_set").options == ["structural", "structural+text"]
    assert "maadbench\\-sim" in _texts(at) or "maadbench-sim" in _texts(at)


def test_rescore_from_the_page_writes_sets_that_the_page_lists(store, monkeypatch):
    at = _open(store, monkeypatch, corpus="maadbench-sim")
    before = _rescore_sources(store)
    at.multiselect(key="rescore_detectors").set_value(["random", "logreg"]).run()
    at.number_input(key="rescore_seeds").set_value(2).run()
    at.button(key="rescore_run").click().run()
    assert not at.exception, at.exception
    new = _rescore_sources(store) - before
    assert len(new) == 1
    source = new.pop()
    text = _texts(at)
    assert "Wrote 4 prediction set(s)" in text
    expected = {f"{source}-{d}-s{s}" for d in ("random", "logreg") for s in (0, 1)}
    assert set(at.code[0].value.splitlines()) == expected
    listed = next(d.value for d in at.dataframe if "test_roc_auc" in d.value.columns and "store_source" in d.value.columns)
    assert expected <= set(listed["set_id"])
    logreg = listed[listed["method"] == "logreg"]["test_roc_auc"]
    assert (logreg > 0.7).all()


def test_a_slice_without_anomalies_gets_a_sentence_not_a_run(store, monkeypatch):
    at = _open(store, monkeypatch, corpus="toy", backbone="C")
    text = _texts(at)
    assert "cannot be re-scored" in text and "no anomalous step" in text
    assert not [b for b in at.button if b.key == "rescore_run"]


def test_an_interrupted_run_says_nothing_was_written(store, monkeypatch):
    at = _open(store, monkeypatch, corpus="maadbench-sim")
    before = read_manifest(store)["sources"]
    # What a click on Cancel leaves behind: the run started, then the page reran.
    at.session_state["rescore_running"] = True
    at.run()
    assert "Re-score cancelled; nothing was written." in _texts(at)
    assert read_manifest(store)["sources"] == before


def test_cross_backbone_matrix_is_drawn(store, monkeypatch):
    at = _open(store, monkeypatch, corpus="maadbench-sim")
    at.multiselect(key="cross_detectors").set_value(["logreg"]).run()
    at.button(key="cross_run").click().run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    assert "seeds [0]" in _texts(at)
