"""Real headless Chromium on the Propagation page: choosing a cell of one backbone's map (a
coloured table) or of every backbone's heatmaps lists the chains behind it (and the link follows), then each other tab renders in the same visit; nothing leaves
localhost. A shared link to a cell is AppTest's (tests/test_propagation_app.py): the list it
opens is the one drawn here after the click."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from browser_support import CELL_XY, choose_cell, keep_shot, new_page, shots_dir, wait_idle

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1500, "height": 2400}
TAB_HEADINGS = {"Chains": "Chain browser", "Recall by role": "Recall by chain role",
                "Failure modes": "MAST failure modes per backbone"}

def test_clicking_a_cell_lists_its_chains_and_the_tabs_render(app_server, browser):
    outside: list[str] = []
    page = new_page(browser, outside, **VIEWPORT)
    page.goto(app_server + "/propagation?map_backbone=GPT-4.1")  # the map of the cell clicked below
    wait_idle(page, "Propagation heatmap per backbone")
    # One backbone's map is a coloured table; a cell chosen in it sets the three cell selectors,
    # which are bound to the URL.
    grid = page.locator("[class*='st-key-table-propagation-map-']").first
    grid.wait_for(timeout=120_000)
    assert page.locator(".js-plotly-plot").count() == 0  # no chart drawn for one backbone
    # Every cell the keys pass on the way opens too: reached once the link names both actions.
    choose_cell(page, grid, "AD", "SC · SOLVE_CLUE", "() => location.search.includes('later_action=APPLY_DELTA') "
                                                     "&& location.search.includes('src_action=SOLVE_CLUE')")
    query = parse_qs(urlparse(page.evaluate("location.href")).query)
    assert query["cell_backbone"] == ["GPT-4.1"] and query["src_action"] == ["SOLVE_CLUE"]
    wait_idle(page, "are followed by a failed APPLY_DELTA step")
    page.get_by_text("each links to the trace explorer at the source step", exact=False).first.wait_for()
    keep_shot(page, shots_dir() / "propagation-cell.png", full_page=True)
    # Every backbone's maps side by side are a Plotly figure whose cells open the same way.
    page.get_by_text("Every backbone side by side", exact=True).click()
    page.wait_for_function("() => location.search.includes('side_by_side=')", timeout=60_000, polling=250)
    cell = ["GPT-5.4", "SOLVE_CLUE", "UNIT_TOOL_CALL"]
    page.wait_for_function(f"() => ({CELL_XY})({cell!r}) !== null", timeout=120_000, polling=250)
    page.wait_for_timeout(500)  # Plotly may draw the figure again after the page's text settles
    xy = page.evaluate(CELL_XY, cell)
    assert xy, "no clickable GPT-5.4 SOLVE_CLUE -> UNIT_TOOL_CALL cell in the heatmaps"
    page.mouse.move(*xy)
    page.mouse.click(*xy)
    page.wait_for_function("() => location.search.includes('later_action=UNIT_TOOL_CALL')", timeout=60_000, polling=250)
    assert parse_qs(urlparse(page.evaluate("location.href")).query)["cell_backbone"] == ["GPT-5.4"]
    wait_idle(page, "are followed by a failed UNIT_TOOL_CALL step")
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
