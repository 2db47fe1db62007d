"""AppTest smoke tests: every page runs on a real store without an exception."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app_support import page_texts
from conftest import APP_ROOMS, REPO

# The simulator splits its rooms evenly over five backbones, and a quarter of each is easy.
GPT41_EASY = f"{APP_ROOMS // 5 // 4} runs"

PAGES = ["pages/overview.py", "pages/boards.py"]


@pytest.fixture()
def app(app_store, monkeypatch):
    monkeypatch.setenv("AUDITATLAS_STORE", str(app_store))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    return at


_texts = page_texts


def _plain(markdown: str) -> str:
    """Markdown source as the reader sees it (components.safe.md escapes with backslashes and
    breaks autolinks with invisible word joiners)."""
    return markdown.replace("\\", "").replace("\u2060", "")


def test_overview_runs_and_marks_simulated_data(app):
    app.run()
    assert not app.exception, app.exception
    text = _texts(app)
    assert "Simulated data" in text
    assert "Action success rate per backbone" in text
    assert len(app.dataframe) >= 4


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs(app, page):
    app.switch_page(page)
    app.run()
    assert not app.exception, app.exception


def test_the_live_curves_are_drawn_on_request(app):
    """LIVE opens on its boards' tables; its ROC-AUC curves are drawn when asked for, by the
    toggle or a link's curves=1."""
    import json

    app.switch_page("pages/boards.py")
    app.query_params["tab"] = "LIVE"
    app.run()
    assert not app.exception, app.exception
    assert not app.get("plotly_chart") and "Turn on *ROC-AUC curves by prefix*" in _texts(app)
    app.toggle(key="curves").set_value(True).run()
    charts = [json.loads(c.proto.spec) for c in app.get("plotly_chart")]
    assert charts and all(t["type"] == "scatter" for c in charts for t in c["data"])
    assert "early-warning bar" in json.dumps(charts[0]["layout"])  # a link's curves=1: tests/test_browser.py


def test_a_board_line_without_a_published_value_reads_a_dash(app):
    """POST localization sets the paper's values beside its released judges; a re-scored line has
    none, and its cell reads "—" (never "None")."""
    from conftest import WHOWHEN

    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/who-and-when")
    app.switch_page("pages/boards.py")
    app.query_params["tab"] = "POST"
    app.run()
    assert not app.exception, app.exception
    published = [t.value[c] for t in app.dataframe for c in t.value.columns if str(c).endswith(" published")]
    cells = [v for column in published for v in column]
    assert cells and all(isinstance(v, str) for v in cells), cells
    assert "—" in cells and any(v[0].isdigit() for v in cells), cells



@pytest.mark.parametrize("page", PAGES)
def test_every_table_keeps_its_key_column_pinned(app, page):
    """A wide table scrolled sideways still says whose row it is: its first column is pinned at
    the left."""
    import json

    app.switch_page(page)
    app.run()
    assert not app.exception, app.exception
    assert len(app.dataframe) >= 2
    for table in app.dataframe:
        config = json.loads(table.proto.columns or "{}")
        first = str(table.value.columns[0])
        assert config.get(first, {}).get("pinned") is True, (first, config)


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
    text = _plain(_texts(app))  # slice values are data: the page escapes them as Markdown
    assert "backbone (llm) in GPT-4.1; difficulty in easy" in text
    assert GPT41_EASY in text


def test_empty_slice_says_so(app):
    """Two filters that no run satisfies together: one clear sentence, no chart, no error.

    The simulator runs Claude Opus 4.8 at temperature 0.0 only (as MAADBench did), so Opus at
    0.3 is empty on the simulated corpus alone, whichever real corpora are also loaded.
    """
    app.query_params["backbone"] = "Claude Opus 4.8"
    app.query_params["temperature"] = "0.3"
    app.run()
    assert not app.exception, app.exception
    assert app.sidebar.multiselect(key="backbone").value == ["Claude Opus 4.8"]
    assert app.sidebar.multiselect(key="temperature").value == ["0.3"]
    assert "holds no runs" in _texts(app)
    assert not app.get("plotly_chart")


def test_link_with_a_value_the_store_lacks_says_so(app):
    """?backbone=gpt-4.1 (wrong case) is not a backbone of this store: the page says so instead
    of silently showing every backbone; the link's other, valid filter still applies."""
    app.query_params["backbone"] = ["gpt-4.1", "GPT-4.1"]
    app.query_params["difficulty"] = "easy"
    app.run()
    assert not app.exception, app.exception
    warnings = [_plain(w.value) for w in app.warning]
    assert any("backbone gpt-4.1 is not in this store" in w for w in warnings), warnings
    assert app.sidebar.multiselect(key="backbone").value == ["GPT-4.1"]
    assert GPT41_EASY in _texts(app)  # GPT-4.1 x easy, as in test_link_restores_the_slice
    # The warning outlives Streamlit's removal of the value from the URL on the first run.
    app.run()
    assert any("backbone gpt-4.1 is not in this store" in _plain(w.value) for w in app.warning)


def test_unknown_link_value_is_rendered_as_text(app):
    """A link value is untrusted text: Markdown in it must not become a link or formatting."""
    app.query_params["domain"] = "[click](http://example.com) **bold**"
    app.run()
    assert not app.exception, app.exception
    warning = next(w.value for w in app.warning if "not in this store" in w.value)
    assert "[click](" not in warning and "**bold**" not in warning
    assert "domain [click](http://example.com) **bold** is not in this store" in _plain(warning)


def test_valid_link_shows_no_store_warning(app):
    app.query_params["backbone"] = "GPT-4.1"
    app.run()
    assert not any("not in this store" in w.value for w in app.warning)


def test_first_launch_builds_the_default_store(tmp_path, monkeypatch):
    """An empty store at first launch is filled with the embedded default, offline (at a size
    the environment sets, so the test takes seconds; `make run` builds 1,500 rooms, 5 seeds)."""
    from auditatlas.store import read_manifest

    store = tmp_path / "empty-store"
    monkeypatch.setenv("AUDITATLAS_STORE", str(store))
    monkeypatch.setenv("AUDITATLAS_DEFAULT_ROOMS", "45")
    monkeypatch.setenv("AUDITATLAS_DEFAULT_SEEDS", "1")
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    assert not at.exception, at.exception
    assert (store / "MANIFEST.json").exists()
    assert "Simulated data" in _texts(at)
    assert "45 runs" in _texts(at)
    sources = read_manifest(store)["sources"]
    assert {"demo", "catchbench"} <= set(sources)
    panel = [name for name in sources if name.startswith("rescore-")]
    assert len(panel) == 1 and sources[panel[0]]["rows"]["prediction_sets"] == 11  # 11 detectors x 1 seed


def test_default_store_size_from_the_environment_must_be_a_number(tmp_path, monkeypatch):
    store = tmp_path / "empty-store"
    monkeypatch.setenv("AUDITATLAS_STORE", str(store))
    monkeypatch.setenv("AUDITATLAS_DEFAULT_ROOMS", "many")
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert any("AUDITATLAS_DEFAULT_ROOMS is 'many'" in _plain(e.value) for e in at.error)
    assert not (store / "MANIFEST.json").exists()

def test_default_size_is_what_make_run_builds(monkeypatch):
    from auditatlas.ingest import demo

    monkeypatch.delenv("AUDITATLAS_DEFAULT_ROOMS", raising=False)
    monkeypatch.delenv("AUDITATLAS_DEFAULT_SEEDS", raising=False)
    assert demo.default_size() == (1500, 5)
