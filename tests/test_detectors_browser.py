"""Real headless Chromium on the Detectors page, over a copy of the app store with a few
prediction sets written into it: the grid renders (every backbone's heatmap and the table), a
click on a heatmap's cell and the choice of a table cell each list that cell's errors and put
the choice in the URL, a shared link restores it, the other
tabs render, no exception reaches the user, and no request leaves localhost."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from browser_support import choose_cell, exceptions_on, keep_shot, new_page, streamlit_server, wait_idle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(detectors_store):
    with streamlit_server(detectors_store) as url:
        yield url


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("detectors-screenshots")


def test_grid_renders_offline_then_choosing_a_cell_lists_its_errors(server, browser, shots):
    """The grid as it opens, then a cell clicked on the heatmap and another chosen in the table,
    in the same visit (a load costs more than a check)."""
    outside: list[str] = []
    page = new_page(browser, outside)
    # The link's side_by_side=1 (as a link writes a declared bool) turns the bound toggle on.
    page.goto(server + "/detectors?side_by_side=1")
    wait_idle(page, "Click a detector")
    body = page.inner_text("body")
    assert "Per-action ROC-AUC" in body and "3 detector(s)" in body
    # Heatmaps side by side, one per backbone of the simulated corpus (Plotly loads lazily).
    # They draw above the table and push it down: the table is measured once they are there.
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    for backbone in ("Claude Opus 4.8", "GPT-4.1", "GPT-5.4"):
        assert page.locator(".js-plotly-plot").first.get_by_text(backbone).count() >= 1
    assert "side_by_side=true" in page.evaluate("location.search")  # the toggle's own spelling, kept
    assert page.locator("[class*='st-key-table-grid-']").count() == 1
    keep_shot(page, shots / "detectors-grid.png", full_page=True)
    assert not exceptions_on(page)
    # The grid's CSV, made when clicked: every cell with its interval and counts, where the
    # table shows the number alone.
    with page.expect_download(timeout=60_000) as done:
        page.locator("[class*='st-key-csv-grid-'] button").first.click()
    rows = list(csv.DictReader(io.StringIO(Path(done.value.path()).read_text(encoding="utf-8"))))
    solve = next(r for r in rows if r["action"].endswith("SOLVE_CLUE"))
    assert "±" in solve["xgboost (1 set)"] or "[" in solve["xgboost (1 set)"], solve
    assert "[" in solve["iforest · basic (3 sets)"], solve  # the interval over its three seeds
    _click_heatmap_cell(page, "xgboost", "SOLVE_CLUE")
    # The table's cell for the same action under another detector, chosen with the keyboard.
    grid = page.locator("[class*='st-key-table-grid-']").first
    choose_cell(page, grid, "random", "SOLVE_CLUE", "() => location.search.includes('detector=random')")
    wait_idle(page, "False positives")
    query = parse_qs(urlparse(page.url).query)
    assert query["detector"] == ["random"] and query["action"] == ["SOLVE_CLUE"]
    # The list of false positives (its CSV button carries the key; the table itself does not).
    assert page.locator(".st-key-csv-errors-positive").count() == 1
    assert "open step" in page.inner_text("body") or page.locator("[data-testid='stDataFrame']").count() >= 4
    keep_shot(page, shots / "detectors-errors.png", full_page=True)
    # The first false positive's link opens that step in the explorer, scored by this set.
    page.locator(".st-key-csv-errors-positive").first.scroll_into_view_if_needed()
    button = page.locator(".st-key-csv-errors-positive").first.bounding_box()
    tables = [b for b in (f.bounding_box() for f in page.locator("[data-testid='stDataFrame']").all())
              if b and b["y"] < button["y"]]
    errors_box = max(tables, key=lambda b: b["y"])
    with page.context.expect_page() as opened:
        page.mouse.click(errors_box["x"] + 90, errors_box["y"] + 35 + 17)  # select the link cell
        page.wait_for_timeout(500)
        page.mouse.click(errors_box["x"] + 90, errors_box["y"] + 35 + 17)  # follow it
    explorer = opened.value
    target = urlparse(explorer.url)
    assert target.path == "/explorer"
    params = parse_qs(target.query)
    assert params["set"][0].startswith("test:random:") and params["run"][0].startswith("maadbench-sim:")
    assert params["step"][0].isdigit()
    explorer.close()
    assert not exceptions_on(page)
    assert not outside, f"requests left localhost: {outside}"


def test_shared_link_and_other_tabs(server, browser, shots):
    outside: list[str] = []
    page = new_page(browser, outside)
    page.goto(server + "/detectors?tab=Overall&rule=top_pct&top_pct=15&backbone=GPT-4.1")
    wait_idle(page, "Random baseline")
    body = page.inner_text("body")
    assert "Random baseline: random" in body
    assert "paired t-test (one-tailed)" in body or "paired t" in body
    keep_shot(page, shots / "detectors-overall.png", full_page=True)
    # The Cost tab in the same visit (a tab is a rerun; a load would boot the app again).
    page.get_by_role("tab", name="Cost", exact=True).click()
    page.wait_for_url("**tab=Cost**", timeout=60_000)
    wait_idle(page, "fit + score wall time")
    assert page.locator("[class*='st-key-csv-cost-']").count() == 1
    keep_shot(page, shots / "detectors-cost.png", full_page=True)
    assert not exceptions_on(page)
    assert not outside, f"requests left localhost: {outside}"


def _click_heatmap_cell(page, detector: str, action: str) -> None:
    """The AUROC heatmap opens the cell clicked, as the table below it and the propagation
    heatmap do: the cell's action and detector reach the link and its errors are listed."""
    chart = page.locator(".st-key-grid-heatmaps .js-plotly-plot").first
    chart.wait_for(timeout=60_000)
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    # The centre of the cell, from the chart's own axes.
    point = page.evaluate("""([detector, action]) => {
        const gd = document.querySelector('.st-key-grid-heatmaps .js-plotly-plot');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, trace = gd.data[1];
        const col = xa.ticktext.indexOf(detector);
        const row = trace.y.findIndex(y => String(y).includes(action));
        const r = gd.getBoundingClientRect();
        return {x: r.left + xa._offset + xa.d2p(trace.x[col]), y: r.top + ya._offset + ya.d2p(trace.y[row]),
                col: col, row: row};
    }""", [detector, action])
    assert point["col"] >= 0 and point["row"] >= 0, point
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function(f"() => window.location.search.includes('detector={detector}')")
    wait_idle(page, "False positives")
    query = parse_qs(urlparse(page.url).query)
    assert query["detector"] == [detector] and query["action"] == [action]
    assert not exceptions_on(page)
