"""A researcher's first hour, in real headless Chromium on the session's app server (the default
store: simulated MAADBench beside the released corpora): the tasks not covered by the other
browser modules, each page they open measured for its badge in the first screen.

Screenshots (``AUDITATLAS_BROWSER_SHOTS=1``) go to a temporary folder outside the repository.
"""
from __future__ import annotations

import re

import pytest

from browser_support import exceptions_on, graph_reads, keep_shot, new_page, shots_dir, wait_idle

pytestmark = pytest.mark.browser
FIRST_SCREEN = {"width": 1400, "height": 1000}
BADGE = ".st-key-page-badge"
BUSY = "Scoring "  # the boards' "Scoring …" spinner text: wait until it is gone too


def _badge_in_first_screen(page, path: str) -> None:
    """The page's one badge, within the first 1000 px at 1400x1000: the simulated corpus named,
    the labels its numbers read. Checked on every page these tasks open; that every declared
    page leads with it is read in process, tests/test_user_text.py."""
    page.get_by_text("Labels: ", exact=False).first.wait_for(timeout=180_000)
    badge = page.locator(BADGE)
    assert badge.count() == 1, path
    text, box = badge.first.inner_text().replace("\u2060", ""), badge.first.bounding_box()  # md()'s invisible joiners
    assert "Simulated data: maadbench-sim" in text and "Labels: released" in text, (path, text)
    assert box is not None and box["y"] + box["height"] <= FIRST_SCREEN["height"], (path, box)
    keep_shot(page, shots_dir("tasks") / f"badge{path.replace('/', '-')}.png")


def test_a_board_opens_on_its_top_group_then_each_tab_renders(app_server, browser):
    """Read the boards: the POST board says who wins (its top group, Holm-adjusted) in the
    first screen, with the floor it is read against; then PRE and LIVE in the same visit."""
    outside: list[str] = []
    page = new_page(browser, outside, **FIRST_SCREEN)
    try:
        page.goto(app_server + "/boards?tab=POST")
        top = page.get_by_text(re.compile(r"^Top group on ")).first  # the board's answer (not the folded methods)
        top.wait_for(timeout=180_000)
        box = top.bounding_box()
        assert box is not None and box["y"] < FIRST_SCREEN["height"], box
        page.get_by_text("Floor: ", exact=False).first.wait_for()
        assert "Holm-adjusted" in page.inner_text("body")
        _badge_in_first_screen(page, "/boards")
        # Then the other tabs in the same visit (a tab is a rerun; a load would boot the app again).
        for tab in ("PRE", "LIVE"):
            page.get_by_role("tab", name=tab, exact=True).click()
            if tab != "PRE":  # the default tab keeps the URL clean
                page.wait_for_url(f"**tab={tab}**", timeout=60_000)
            page.get_by_text(f"{tab}: ", exact=False).first.wait_for(timeout=180_000)  # the open tab's caption
            wait_idle(page, "rests on", busy_text=BUSY)
            keep_shot(page, shots_dir() / f"boards-{tab.lower()}.png", full_page=True)
    finally:
        page.close()
    assert not outside, f"requests left localhost: {outside}"


def test_an_export_shared_from_a_chain_leads_to_its_step(app_server, browser, tmp_path):
    """Follow a propagation chain to a step, and share it: the cell's view exported with the app's
    own button is one file whose badge names the simulated corpus and whose links lead to this
    served app; opened from disk, a chain's link lands on the Explorer at its source step, which
    is an anomaly there (the chain is made of failed steps); the Explorer's own link to the view,
    opened fresh, shows the same step."""
    from urllib.parse import parse_qs, urlparse

    outside: list[str] = []
    page = new_page(browser, outside, **FIRST_SCREEN)
    try:
        page.goto(app_server + "/propagation?cell_backbone=GPT-4.1&src_action=SOLVE_CLUE&later_action=APPLY_DELTA")
        wait_idle(page, "are followed by a failed APPLY_DELTA step")
        _badge_in_first_screen(page, "/propagation")
        with page.expect_download(timeout=120_000) as done:
            page.get_by_role("button", name="Export this view").click()
        path = tmp_path / "cell.html"
        done.value.save_as(path)
        html = path.read_text(encoding="utf-8")
        assert "Simulated data: maadbench-sim" in html and 'class="badge"' in html
        assert 'href="/' not in html and f'href="{app_server}/explorer?' in html
        page.goto(path.as_uri())
        first = page.get_by_role("link", name="open step").first
        target = first.get_attribute("href")
        assert target.startswith(app_server + "/explorer?"), target
        asked = parse_qs(urlparse(target).query)
        first.click()
        page.wait_for_url(f"{app_server}/explorer?**", timeout=60_000)
        wait_idle(page, "Step detail")
        step = int(asked["step"][0])
        shape = graph_reads(page, f"() => window.traceNetwork.body.data.nodes.get('{step}')?.shape", "diamond")
        assert shape == "diamond", (target, shape)  # the step the link names, drawn as an anomaly
        body = page.inner_text("body").replace("\u2060", "")
        assert f"Step {step} ·" in body
        shared = page.locator('[data-testid="stCode"]').last.inner_text().strip()  # "Link to this view"
        assert parse_qs(urlparse(shared).query)["run"] == asked["run"], shared
        again = new_page(browser, outside, **FIRST_SCREEN)
        try:
            again.goto(shared)
            wait_idle(again, "Step detail")
            assert f"Step {step} ·" in again.inner_text("body").replace("\u2060", "")
        finally:
            again.close()
    finally:
        page.close()
    outside = [url for url in outside if url != path.as_uri()]  # the file itself, opened from disk
    assert not outside, f"requests left localhost: {outside}"


def test_a_searched_step_opens_its_similar_steps(app_server, browser):
    """Search, then similar steps: the Explorer's text search lists the steps holding a phrase; a
    click on a hit opens its step there, and its "Steps like this one" link opens the Patterns
    page on that very step, listing its neighbours."""
    from urllib.parse import parse_qs, urlparse

    outside: list[str] = []
    page = new_page(browser, outside, **FIRST_SCREEN)
    try:
        page.goto(f"{app_server}/explorer?corpus=maadbench-sim&q=compass")
        wait_idle(page, "steps match")
        _badge_in_first_screen(page, "/explorer")
        grid = page.locator('[data-testid="stDataFrame"]').last  # the hits (the run list is folded above)
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        page.mouse.move(box["x"] + 18, box["y"] + 35 + 17)
        page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)  # the first hit's selection box
        page.wait_for_function("() => new URLSearchParams(location.search).has('step')", timeout=60_000)
        opened = parse_qs(urlparse(page.url).query)
        wait_idle(page, "Step detail")
        link = page.get_by_role("link", name="Steps like this one")
        target = parse_qs(urlparse(link.get_attribute("href")).query)
        assert (target["run"], target["step"]) == (opened["run"], opened["step"]), (target, opened)
        if link.get_attribute("target") == "_blank":  # Streamlit's link button opens a new tab
            with page.context.expect_page(timeout=60_000) as opening:
                link.click()
            patterns = opening.value
        else:
            link.click()
            patterns = page
        patterns.wait_for_url("**/patterns?**", timeout=60_000)
        wait_idle(patterns, "1 = the same step")
        assert exceptions_on(patterns) == []
        _badge_in_first_screen(patterns, "/patterns")
        if patterns is not page:
            patterns.close()
    finally:
        page.close()
    assert not outside, f"requests left localhost: {outside}"
