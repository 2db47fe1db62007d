"""Real headless Chromium against the real app: a link restores the Overview's slice, LIVE opens
on tau-bench from a link, and no request leaves localhost (offline means offline in the
browser). Each board tab in turn: tests/test_tasks_browser.py."""
from __future__ import annotations

import pytest

from browser_support import keep_shot, new_page, shots_dir, wait_idle

pytestmark = pytest.mark.browser
BUSY = "Scoring "  # the boards' "Scoring …" spinner text: wait until it is gone too


def test_a_link_restores_the_slice_and_choosing_a_filter_updates_the_url(app_server, browser):
    """The Overview opened from a shared link with a slice, then the interactive path in the same
    visit: adding a backbone in the sidebar filters the page and the link (one page load: a load
    costs more than a check; the unsliced Overview is drawn by tests/test_app.py)."""
    outside: list[str] = []
    page = new_page(browser, outside)
    page.goto(app_server + "/?backbone=GPT-4.1&difficulty=easy")
    wait_idle(page, "Action success rate per backbone", busy_text=BUSY)
    page.get_by_text("backbone (llm) in GPT-4.1; difficulty in easy", exact=False).first.wait_for()
    page.get_by_text("Simulated data", exact=False).first.wait_for()
    keep_shot(page, shots_dir() / "overview-sliced.png", full_page=True)
    # Streamlit marks the app inert while a run is still settling; wait until it is live.
    page.wait_for_function("""() => { const el = document.querySelector('input[aria-label="Backbone (LLM)"]');
                                      return el && !el.closest('[inert]'); }""", timeout=180_000, polling=500)
    page.get_by_role("combobox", name="Backbone (LLM)").click(timeout=60_000)
    page.get_by_role("option", name="GPT-5.4", exact=True).click()
    page.keyboard.press("Escape")
    page.wait_for_url("**backbone=GPT-5.4**", timeout=60_000)
    assert "backbone=GPT-4.1" in page.url and "difficulty=easy" in page.url
    wait_idle(page, "backbone (llm) in GPT-4.1, GPT-5.4; difficulty in easy", busy_text=BUSY)
    assert not outside, f"requests left localhost: {outside}"


def test_live_trajectories_for_taubench_from_a_link(app_server, browser):
    """LIVE on the real tau-bench runs, opened straight from a shared link."""
    from conftest import TAUBENCH

    if not TAUBENCH.exists():
        pytest.skip("needs ../shared/data/tau-bench")
    outside: list[str] = []
    page = new_page(browser, outside)
    page.goto(app_server + "/boards?tab=LIVE&board_live_corpus=taubench&curves=1")
    wait_idle(page, "rests on", busy_text=BUSY)
    page.get_by_text("on taubench", exact=False).first.wait_for()
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=120_000)  # the trajectories
    wait_idle(page, "rests on", busy_text=BUSY)
    keep_shot(page, shots_dir() / "boards-live-taubench.png", full_page=True)
    assert not outside, f"requests left localhost: {outside}"
