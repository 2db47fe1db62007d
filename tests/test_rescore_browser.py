"""Real headless Chromium on the re-score page: a re-score run from the page lands in the store
and shows up in the page's list of sets (and on /detectors when that page is there); Cancel
stops a run and nothing is written; no request leaves localhost."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from auditatlas.store import read_manifest
from browser_support import exceptions_on, keep_shot, new_page, streamlit_server, wait_idle
from conftest import REPO

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A private copy of the session's 300-room demo store (the page writes into it; the build
    is shared with the other modules that read that recipe)."""
    from stores import copy_of

    return copy_of("demo-300-s0", tmp_path_factory.mktemp("rescore-browser") / "store")


@pytest.fixture(scope="module")
def server(store):
    with streamlit_server(store) as url:
        yield url


def _rescore_sources(store: Path) -> set[str]:
    return {name for name in read_manifest(store)["sources"] if name.startswith("rescore-")}


def _listed(page) -> int:
    """How many re-scored sets the page's list says it holds (0 when it says there are none)."""
    text = page.inner_text("body")
    found = re.search(r"(\d+) re-scored set\(s\) on the slice", text)
    return int(found.group(1)) if found else 0


def _wait_live(page) -> None:
    """Streamlit marks the app inert while a run settles; wait until the button can be clicked."""
    page.wait_for_function("""() => { const b = [...document.querySelectorAll('button')]
                                          .find(e => e.innerText.trim() === 'Run re-score');
                                      return b && !b.disabled && !b.closest('[inert]'); }""",
                           timeout=180_000, polling=500)


def test_rescore_from_the_page_then_see_the_new_sets(server, browser, store, tmp_path):
    outside: list[str] = []
    page = new_page(browser, outside)
    page.goto(server + "/rescore?corpus=maadbench-sim")
    wait_idle(page, "Run a re-score")
    _wait_live(page)
    before_sources, before_listed = _rescore_sources(store), _listed(page)
    page.get_by_role("button", name="Run re-score").click()
    page.get_by_text("Wrote 3 prediction set(s)", exact=False).first.wait_for(timeout=240_000)
    wait_idle(page, "Re-scored prediction sets")
    keep_shot(page, tmp_path / "rescore-done.png", full_page=True)

    new = _rescore_sources(store) - before_sources
    assert len(new) == 1
    source = new.pop()
    body = page.inner_text("body")
    for detector in ("random", "iforest", "logreg"):
        assert f"{source}-{detector}-s0" in body
    assert _listed(page) == before_listed + 3
    assert not exceptions_on(page)

    if 'pages/detectors.py' in (REPO / "app.py").read_text():
        page.goto(server + "/detectors?corpus=maadbench-sim&detectors_corpus=maadbench-sim")
        wait_idle(page, "logreg", timeout=240_000)
        keep_shot(page, tmp_path / "detectors-after-rescore.png", full_page=True)
        assert "logreg · structural" in page.content()
        assert not exceptions_on(page)
    assert not outside, f"requests left localhost: {outside}"


def test_cancel_stops_the_run_and_writes_nothing(server, browser, store, tmp_path):
    outside: list[str] = []
    page = new_page(browser, outside)
    # Slow on purpose (two ensembles, ten seeds), so there is time to press Cancel.
    page.goto(server + "/rescore?corpus=maadbench-sim&rescore_detectors=random-forest&rescore_detectors=hist-gb"
              "&rescore_seeds=10")
    wait_idle(page, "Run a re-score")
    _wait_live(page)
    before = read_manifest(store)["sources"]
    page.get_by_role("button", name="Run re-score").click()
    page.get_by_text("jobs)", exact=False).first.wait_for(timeout=120_000)  # the progress bar is moving
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text("Re-score cancelled; nothing was written.", exact=False).first.wait_for(timeout=120_000)
    keep_shot(page, tmp_path / "rescore-cancelled.png", full_page=True)
    assert read_manifest(store)["sources"] == before
    assert not exceptions_on(page)
    assert not outside, f"requests left localhost: {outside}"
