"""What a newcomer sees first, in real headless Chromium: the longest run's graph
opens fitted to its frame (every step inside it, labels at least 12 px) at 1,500 px wide and
again when the window is narrowed to 1,000 px, and the first page of the run list reads as
distinct runs.

Screenshots go to a temporary folder outside the repository tree (tests/browser_support.py).
"""
from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from browser_support import graph_frame, keep_shot, new_page, shots_dir, wait_idle

pytestmark = pytest.mark.browser
MIN_LABEL_PX = 12
WIDTHS = (1500, 1000)

# Each node's box (label included) in the canvas's CSS pixels, the label's size on screen, and
# the frame: from vis-network's own geometry (getBoundingBox, canvasToDOM, getScale).
GEOMETRY = """() => {
  const net = window.traceNetwork, canvas = net.canvas.frame.canvas, scale = net.getScale();
  const frame = document.getElementById('trace-graph').getBoundingClientRect();
  const nodes = net.body.data.nodes.getIds().map(id => {
    const b = net.getBoundingBox(id);
    const a = net.canvasToDOM({x: b.left, y: b.top}), c = net.canvasToDOM({x: b.right, y: b.bottom});
    return {id: String(id), left: a.x, top: a.y, right: c.x, bottom: c.y,
            label_px: net.body.nodes[id].options.font.size * scale};
  });
  return {width: canvas.clientWidth, height: canvas.clientHeight, frame_bottom: frame.bottom,
          frame_right: frame.right, scale: scale, nodes: nodes};
}"""


def _longest(store, corpus: str | None) -> tuple[str, int]:
    """The run with the most steps (of ``corpus``, or of the whole store), by the run list's query."""
    import queries

    row = queries.run("explorer_runs", {
        "slice": {"corpus": [corpus]} if corpus else {}, "run_q": "", "run_pattern": "%", "f_corpus": [],
        "f_backbone": [], "f_difficulty": [], "f_outcome": [], "min_steps": None, "max_steps": None,
        "min_anomalous": None, "max_anomalous": None, "min_chain": None, "max_chain": None, "sort": "steps",
        "descending": True, "limit": 1, "offset": 0}, root=store).iloc[0]
    return str(row["run"]), int(row["steps"])


def _graphs(app_server, browser, run: str, shot: str) -> Iterator[tuple[int, dict, str, dict, list[str]]]:
    """The explorer opened on ``run`` in a window of the first of ``WIDTHS``, then the same page
    narrowed to each next width (the graph re-wraps and fits again on a resize, by the same
    code as on open): per width, the graph's geometry, its hint line, the iframe's box and the
    requests that left localhost."""
    outside: list[str] = []
    page = new_page(browser, outside, width=WIDTHS[0], height=1400)
    page.goto(f"{app_server}/explorer?run={quote(run, safe='')}")
    wait_idle(page, "Step detail")
    frame = graph_frame(page)
    try:
        for i, width in enumerate(WIDTHS):
            if i:
                before = frame.evaluate("() => window.traceNetwork.canvas.frame.canvas.clientWidth")
                page.set_viewport_size({"width": width, "height": 1400})
                frame.wait_for_function("w => window.traceNetwork.canvas.frame.canvas.clientWidth !== w", arg=before,
                                        timeout=60_000)
            page.wait_for_timeout(300)  # the fit runs after vis-network's drawing
            shown = frame.evaluate(GEOMETRY)
            hint = frame.locator("#graph-hint").inner_text()
            iframe = page.locator("iframe").first
            iframe.scroll_into_view_if_needed()
            keep_shot(page, shots_dir("first-look") / f"{shot}-{width}.png")
            yield width, shown, hint, iframe.bounding_box(), outside
    finally:
        page.close()


def _outside(shown: dict, sides: str = "ltrb") -> list[str]:
    limits = {"l": lambda n: n["left"] < 0, "t": lambda n: n["top"] < 0,
              "r": lambda n: n["right"] > shown["width"], "b": lambda n: n["bottom"] > shown["height"]}
    return [n["id"] for n in shown["nodes"] if any(limits[side](n) for side in sides)]


def _readable(shown: dict) -> None:
    small = min(n["label_px"] for n in shown["nodes"])
    assert small >= MIN_LABEL_PX, f"labels are {small:.1f} px at the opened zoom ({shown['scale']:.2f})"


def test_longest_default_run_opens_fitted_to_its_frame(app_server, browser, app_store):
    """The default corpus's longest run: every step inside the frame, every label readable, at
    each width."""
    run, steps = _longest(app_store, "maadbench-sim")
    for width, shown, _hint, box, outside in _graphs(app_server, browser, run, "graph-default-longest"):
        assert len(shown["nodes"]) == steps
        assert _outside(shown) == [], f"steps outside the {shown['width']}x{shown['height']} frame of {run} at {width}"
        _readable(shown)
        # The frame itself is whole: inside its iframe, and the iframe inside the window's width.
        assert shown["frame_bottom"] <= box["height"] + 1 and box["x"] + box["width"] <= width
        assert not outside, f"requests left localhost: {outside}"


def test_longest_run_of_the_store_opens_readable(app_server, browser, app_store):
    """The store's longest run (tau-bench, one lane of 61 steps) wraps into rows as wide as the
    frame; when the rows need more height than the frame may take, it opens readable on the
    first rows and says the rest is below."""
    run, steps = _longest(app_store, None)
    for width, shown, hint, box, outside in _graphs(app_server, browser, run, "graph-store-longest"):
        assert len(shown["nodes"]) == steps
        assert _outside(shown, "lr") == [], f"a wrapped row runs past the frame's side at {width}"
        _readable(shown)
        below = _outside(shown, "tb")
        if below:
            assert "drag up to see the rest" in hint, hint
            assert "0" not in below  # the first step is in view
        assert "continues on the next" in hint, hint
        assert shown["frame_bottom"] <= box["height"] + 1 and box["x"] + box["width"] <= width
        assert not outside, f"requests left localhost: {outside}"


def test_first_page_of_the_run_list_reads_as_distinct_runs(app_server, browser):
    outside: list[str] = []
    page = new_page(browser, outside, width=1500, height=1400)
    page.goto(f"{app_server}/explorer")
    wait_idle(page, "runs; page 1 of")
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.locator("table[role='grid']").first.wait_for(state="attached", timeout=60_000)
    keep_shot(page, shots_dir("first-look") / "run-list-1500.png")
    # The grid's accessible table (glide-data-grid draws on a canvas and mirrors its visible
    # cells in a table for screen readers): the header names each column.
    headers = [h.strip() for h in grid.locator("table[role='grid'] thead th").all_inner_texts()]
    rows = grid.locator("table[role='grid'] tbody tr")
    column = headers.index("run")
    labels = [rows.nth(i).locator("td").nth(column).inner_text().strip() for i in range(rows.count())]
    assert len(labels) >= 10, (headers, labels)
    assert len(set(labels)) == len(labels), labels
    # Short, and not the head every id of the corpus shares (what the list used to show).
    assert all(0 < len(label) <= 60 and ":run_" not in label for label in labels), labels
    assert not outside, f"requests left localhost: {outside}"
