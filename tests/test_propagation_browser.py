"""Real headless Chromium on the Propagation page: clicking a heatmap cell lists the chains
behind it (and the link follows), then each other tab renders in the same visit; nothing leaves
localhost. A shared link to a cell is AppTest's (tests/test_propagation_app.py): the list it
opens is the one drawn here after the click."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from browser_support import CELL_XY, keep_shot, new_page, shots_dir, wait_idle

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1500, "height": 2400}
TAB_HEADINGS = {"Chains": "Chain browser", "Recall by role": "Recall by chain role",
                "Failure modes": "MAST failure modes per backbone"}

def test_clicking_a_cell_lists_its_chains_and_the_tabs_render(app_server, browser):
    outside: list[str] = []
    page = new_page(browser, outside, **VIEWPORT)
    page.goto(app_server + "/propagation?map_backbone=GPT-4.1")  # the map of the cell clicked below
    wait_idle(page, "Propagation heatmap per backbone")
    page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
    page.wait_for_function("""() => { const el = document.querySelector('.js-plotly-plot');
                                      return el && !el.closest('[inert]'); }""", timeout=180_000, polling=500)
    # Plotly may draw the figure again after the page's text settles: wait for the cell itself.
    cell = ["GPT-4.1", "SOLVE_CLUE", "APPLY_DELTA"]
    try:
        page.wait_for_function(f"() => ({CELL_XY})({cell!r}) !== null", timeout=60_000, polling=250)
    except Exception:  # noqa: BLE001 - the assertion below says what is missing
        pass
    xy = page.evaluate(CELL_XY, cell)
    assert xy, "no clickable GPT-4.1 SOLVE_CLUE -> APPLY_DELTA cell in the heatmap"
    page.mouse.move(*xy)
    page.mouse.click(*xy)
    # The click sets the three cell selectors, which are bound to the URL.
    page.wait_for_function("() => location.search.includes('later_action=APPLY_DELTA')", timeout=60_000, polling=250)
    query = parse_qs(urlparse(page.evaluate("location.href")).query)
    assert query["cell_backbone"] == ["GPT-4.1"] and query["src_action"] == ["SOLVE_CLUE"]
    wait_idle(page, "are followed by a failed APPLY_DELTA step")
    page.get_by_text("each links to the trace explorer at the source step", exact=False).first.wait_for()
    keep_shot(page, shots_dir() / "propagation-cell.png", full_page=True)
    _each_tab_renders(page)
    assert not outside, f"requests left localhost: {outside}"


def _each_tab_renders(page) -> None:
    """Each other tab in turn, on a page already open (a page load costs more than a tab's draw)."""
    for tab, heading in TAB_HEADINGS.items():
        before = page.evaluate("location.search")
        page.get_by_role("tab", name=tab, exact=True).click()
        # The tab is bound to the link: it changes (each tab has its own value) and names one.
        page.wait_for_function("before => location.search.includes('tab=') && location.search !== before",
                               arg=before, timeout=60_000, polling=250)
        wait_idle(page, heading)
        keep_shot(page, shots_dir() / f"propagation-{tab.split()[0].lower()}.png", full_page=True)
