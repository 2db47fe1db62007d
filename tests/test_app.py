"""AppTest smoke tests: every page runs on a real store without an exception."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from conftest import REPO

PAGES = ["pages/overview.py", "pages/boards.py"]


@pytest.fixture()
def app(app_store, monkeypatch):
    monkeypatch.setenv("AUDITATLAS_STORE", str(app_store))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    return at


def _texts(at) -> str:
    parts = [m.value for m in at.markdown] + [t.value for t in at.title] + [s.value for s in at.subheader]
    parts += [c.value for c in at.caption] + [i.value for i in at.info] + [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def test_overview_runs_and_marks_simulated_data(app):
    app.run()
    assert not app.exception, app.exception
    text = _texts(app)
    assert "Simulated data" in text
    assert "Action success rate per backbone" in text
    assert len(app.dataframe) >= 4


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs(app, page):
    app.run()
    app.switch_page(page)
    app.run()
    assert not app.exception, app.exception


def test_link_restores_the_slice(app):
    """A shared link (?backbone=...&difficulty=...) reproduces the author's slice.

    (AppTest does not rerun the entry script after a sidebar interaction in a navigation
    app, so the interactive path is covered by the browser test.)
    """
    app.query_params["backbone"] = "GPT-4.1"
    app.query_params["difficulty"] = "easy"
    app.run()
    assert not app.exception
    assert app.sidebar.multiselect(key="backbone").value == ["GPT-4.1"]
    text = _texts(app)
    assert "backbone (llm) in GPT-4.1; difficulty in easy" in text
    # 1,500 simulated rooms split evenly: 300 per backbone; easy = a quarter of each.
    assert "75 runs" in text


def test_empty_slice_says_so(app):
    """Two filters that no run satisfies together: one clear sentence, no chart, no error."""
    app.query_params["corpus"] = "whowhen"
    app.query_params["backbone"] = "GPT-4.1"
    app.run()
    if app.sidebar.multiselect(key="corpus").value != ["whowhen"]:
        pytest.skip("needs ../shared/data/whowhen (a corpus without backbones)")
    assert not app.exception
    assert "holds no runs" in _texts(app)


def test_first_launch_builds_the_default_store(tmp_path, monkeypatch):
    """An empty store at first launch is filled with the embedded default, offline."""
    store = tmp_path / "empty-store"
    monkeypatch.setenv("AUDITATLAS_STORE", str(store))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    assert (store / "MANIFEST.json").exists()
    assert "Simulated data" in _texts(at)
    assert "1,500 runs" in _texts(at)
