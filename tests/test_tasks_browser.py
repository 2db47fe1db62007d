"""A researcher's first hour, in real headless Chromium on the session's app server (the default
store: simulated MAADBench beside the released corpora): what every page shows before anything
else, and the tasks not covered by the other browser modules.

Screenshots (``AUDITATLAS_BROWSER_SHOTS=1``) go to a temporary folder outside the repository.
"""
from __future__ import annotations

import pytest

from auditatlas.views.pages import PAGES
from browser_support import keep_shot, new_page, shots_dir

pytestmark = pytest.mark.browser
FIRST_SCREEN = {"width": 1400, "height": 1000}
BADGE = ".st-key-page-badge"


def _badge(page) -> tuple[str, dict]:
    """The page badge's text and box, once it is drawn."""
    badge = page.locator(BADGE).first
    page.get_by_text("Labels: ", exact=False).first.wait_for(timeout=180_000)
    return badge.inner_text().replace("\u2060", ""), badge.bounding_box()  # md()'s invisible joiners


def test_every_page_wears_the_badge_in_its_first_screen(app_server, browser):
    """Every declared page that shows the sidebar slice's numbers (the declarations say which,
    auditatlas/views/pages.py) opens with one badge in its first screen at 1400x1000: the
    simulated corpus named, the labels its numbers read."""
    outside: list[str] = []
    declared = [p for p in PAGES if p.badge]
    assert {"/", "/boards", "/explorer", "/search", "/review"} <= {p.path for p in declared}
    for state in declared:
        page = new_page(browser, outside, **FIRST_SCREEN)
        try:
            page.goto(app_server + state.path)
            text, box = _badge(page)
            assert "Simulated data: maadbench-sim" in text, (state.path, text)
            assert "Labels: released" in text, (state.path, text)
            assert box is not None and box["y"] + box["height"] <= FIRST_SCREEN["height"], (state.path, box)
            assert page.locator(BADGE).count() == 1, state.path
            keep_shot(page, shots_dir("tasks") / f"badge{state.path.replace('/', '-') or '-overview'}.png")
        finally:
            page.close()
    assert not outside, f"requests left localhost: {outside}"
