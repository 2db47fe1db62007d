"""Real headless Chromium on the explorer: deep links to a Who&When run and to a simulated
MAADBench run show the graph (drawn by vis-network, offline), the step detail and the judges'
strip; choosing a step updates the link; no request leaves localhost. (The Explorer's text
search, a hit opened and its similar steps: tests/test_tasks_browser.py.)

Screenshots go to a temporary folder outside the repository tree.
"""
from __future__ import annotations

from urllib.parse import parse_qs, quote, urlparse

import pytest

from browser_support import graph_frame, graph_reads, keep_shot, new_page, shots_dir, wait_idle
from conftest import WHOWHEN

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1500, "height": 2600}  # tall enough for the graph, the step detail and the strip


def test_whowhen_deep_link(app_server, browser):
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen")
    import json

    n = len(json.loads((WHOWHEN / "1.json").read_text())["history"])
    outside: list[str] = []
    page = new_page(browser, outside, **VIEWPORT)
    run, judge = "whowhen:Algorithm-Generated/1", "whowhen:judge:all_at_once:gpt-5.4"
    page.goto(f"{app_server}/explorer?run={quote(run, safe='')}&step=1&set={quote(judge, safe='')}&top_k=1")
    wait_idle(page, "Judges on this run")
    frame = graph_frame(page)
    assert frame.evaluate("() => window.traceNetwork.body.data.nodes.length") == n
    # Hidden by default: only the hand-off chain is drawn, not the n(n-1)/2 inferred context edges.
    assert frame.evaluate("() => window.traceNetwork.body.data.edges.length") == n - 1
    assert frame.evaluate("() => window.traceNetwork.getSelectedNodes()") == ["1"]
    page.get_by_text("Step detail").first.wait_for()
    page.get_by_text("characters", exact=False).first.wait_for()
    page.get_by_text("picked the human decisive step", exact=False).first.wait_for()  # the strip's legend
    page.get_by_text("43 prediction sets", exact=False).first.wait_for()
    keep_shot(page, shots_dir() / "explorer-whowhen.png", full_page=True)

    # The interactive path: choosing another step in the selector updates the link and the graph.
    page.get_by_role("combobox", name="Step").click(timeout=60_000)
    page.get_by_role("option", name="3 ·", exact=False).first.click()
    page.wait_for_url("**step=3**", timeout=60_000)
    wait_idle(page, "Judges on this run")
    assert graph_reads(page, "() => window.traceNetwork.getSelectedNodes()", ["3"]) == ["3"]
    assert parse_qs(urlparse(page.url).query)["set"] == [judge]
    # Showing the inferred context edges (toggle) puts them in the link and in the graph.
    page.get_by_text("Show inferred full-context edges").click()
    page.wait_for_url("**context=1**", timeout=60_000)
    wait_idle(page, "Judges on this run")
    edges = n * (n - 1) // 2 + n - 1
    assert graph_reads(page, "() => window.traceNetwork.body.data.edges.length", edges) == edges
    assert not outside, f"requests left localhost: {outside}"


def test_simulated_maadbench_deep_link(app_server, browser, app_store):
    import queries

    row = queries.run("explorer_runs", {
        "slice": {"corpus": ["maadbench-sim"]}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [],
        "f_difficulty": ["hard"], "f_outcome": [], "min_steps": None, "max_steps": None,
        "min_anomalous": None, "max_anomalous": None, "min_chain": None, "max_chain": None, "sort": "steps",
        "descending": True, "limit": 1, "offset": 0}, root=app_store).iloc[0]
    outside: list[str] = []
    page = new_page(browser, outside, **VIEWPORT)
    page.goto(f"{app_server}/explorer?corpus=maadbench-sim&run={quote(row['run'], safe='')}&step=2&color=action")
    wait_idle(page, "Step detail")
    frame = graph_frame(page)
    assert frame.evaluate("() => window.traceNetwork.body.data.nodes.length") == int(row["steps"])
    frame.get_by_text("fill = action", exact=False).wait_for()
    page.get_by_text("Input text").first.wait_for()
    keep_shot(page, shots_dir() / "explorer-maadbench-sim.png", full_page=True)
    assert not outside, f"requests left localhost: {outside}"
