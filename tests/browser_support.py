"""Real headless Chromium against a real Streamlit server: the pieces every browser test shares.

Debian's chromium (``make test`` installs it when missing); never a browser download. Every
request is recorded, and one that leaves localhost is a failure: offline means offline.
Screenshots (``AUDITATLAS_BROWSER_SHOTS=1``) go to a temporary folder, never inside the
repository tree.

The session's app server (``app_server``, on the app store) and browser (``browser``) are
fixtures of tests/conftest.py, shared by every module.
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

from components import serve

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(tempfile.gettempdir()) / "auditatlas-browser"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 # A reader who asks for reduced motion, and animation and scrolling on the main
                 # thread: Streamlit's spinners, skeletons and transitions then cost Chromium
                 # about a fifth less CPU per page visit (16-17 against 19-22 CPU-s for five
                 # visits, interleaved runs: bench/chromium_flags.py in bench/README.md). No
                 # test reads an animation; what the pages show is the same.
                 "--force-prefers-reduced-motion", "--disable-threaded-animation", "--disable-threaded-scrolling",
                 "--disable-checker-imaging"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is missing: `make test` installs it (apt-get install chromium).")
        pytest.skip("Debian chromium is not installed")


@contextmanager
def streamlit_server(store: Path) -> Iterator[str]:
    """The app on ``store`` at http://127.0.0.1:PORT, started as `make run` starts it (components/serve.py),
    stopped on exit."""
    require_chromium()
    try:
        with serve.running(store) as url:
            yield url
    except serve.NotStarted as exc:
        pytest.fail(f"streamlit did not start: {exc}")


@contextmanager
def chromium() -> Iterator:
    """One headless Chromium profile (a persistent context) whose pages the tests open.

    A profile on disk keeps the HTTP cache and V8's code cache between pages, so a page after
    the first boots Streamlit's bundle from compiled code: measured here, 1.1 s and 1.8 CPU-s to
    a bare Streamlit page's first text against 2.0 s and 4.5 CPU-s in a fresh context per page.
    Pages share cookies and local storage; the app keeps its state in the URL and the server's
    session, so no test depends on another's.
    """
    from playwright.sync_api import sync_playwright

    require_chromium()
    profile = tempfile.mkdtemp(prefix="auditatlas-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                            args=CHROMIUM_ARGS)
            # Playwright's own default (30 s for a click, a navigation or a wait) is a few page
            # loads on a loaded machine: a CI run once went 13 times slower than here for a
            # while. A test's waits stay bounded, at two minutes.
            context.set_default_timeout(120_000)
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def new_page(browser, outside: list[str], width: int = 1400, height: int = 1800, dialogs: list[str] | None = None):
    """A page that appends every request leaving localhost to ``outside`` (and, when ``dialogs``
    is given, the message of every dialog, which it dismisses)."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": height})

    def record(request):
        if request.url.startswith(("data:", "blob:", "about:")):
            return
        if (urlparse(request.url).hostname or "") not in LOCAL_HOSTS:
            outside.append(request.url)

    page.on("request", record)
    if dialogs is not None:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return page


def wait_idle(page, text: str, timeout: float = 180_000, busy_text: str | None = None) -> None:
    """Wait for ``text``, then until the page stops changing (no skeleton or spinner, stable text).

    ``busy_text`` (e.g. "Scoring ", the boards' spinner text) marks a page still at work: wait
    for it to be gone too, before the stability check."""
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout)
    if busy_text is not None:
        page.wait_for_function("busy => !document.body.innerText.includes(busy)", arg=busy_text,
                               timeout=timeout, polling=500)
    # Idle: no script running (Streamlit's running icon), nothing stale, no skeleton or
    # spinner, and the text unchanged over 0.75 s. Polled, with the last change kept on the
    # window: Playwright ends wait_for_function on the first promise a check returns, whatever
    # it resolves to, so a check written as a promise waited 0.75 s once and never for idle.
    page.evaluate("() => { delete window.__idle; }")
    page.wait_for_function(
        """() => {
            const now = performance.now(), size = document.body.innerText.length;
            const s = window.__idle || (window.__idle = {size: -1, since: now});
            const busy = document.querySelector('[data-testid="stSkeleton"], [data-testid="stSpinner"], '
                + '[data-testid="stStatusWidgetRunningIcon"], [data-stale="true"]');
            if (busy || size !== s.size) { s.size = size; s.since = now; return false; }
            return now - s.since >= 750;
        }""",
        timeout=timeout, polling=250,
    )


def exceptions_on(page) -> list[str]:
    """Texts of Streamlit exception boxes on the page (a traceback shown to the user)."""
    boxes = page.locator('[data-testid="stException"]')
    return [boxes.nth(i).inner_text() for i in range(boxes.count())]


def graph_frame(page, timeout: float = 60_000):
    """The frame holding the explorer's run graph, once vis-network has drawn it."""
    deadline = time.time() + timeout / 1000
    while time.time() < deadline:
        for frame in page.frames:
            try:
                if frame.evaluate("() => !!(window.traceNetwork && window.vis)"):
                    return frame
            except Exception:  # noqa: BLE001 - a frame may be navigating
                pass
        page.wait_for_timeout(300)
    raise AssertionError("the run graph was not drawn")


def graph_reads(page, script: str, expected, timeout: float = 60_000):
    """What ``script`` evaluates to in the run graph's frame once it is ``expected``, or the last
    value seen when ``timeout`` ms pass. After a change of step or edges the URL and the page
    text update before the graph's frame is replaced (seen under load: the old frame still
    selected the old step)."""
    deadline = time.time() + timeout / 1000
    seen = None
    while time.time() < deadline:
        try:
            seen = graph_frame(page, timeout=timeout).evaluate(script)
        except Exception:  # noqa: BLE001 - the frame is being replaced
            seen = None
        if seen == expected:
            break
        page.wait_for_timeout(300)
    return seen


def keep_shot(page, path: Path, full_page: bool = False) -> None:
    """A screenshot at ``path`` when ``AUDITATLAS_BROWSER_SHOTS`` is set (to look at the pages as a
    person would). Off by default: no assertion reads them, and the ~20 of them cost the suite
    0.2-1.7 CPU-seconds each (a full page drawn and PNG-encoded)."""
    if os.environ.get("AUDITATLAS_BROWSER_SHOTS"):
        page.screenshot(path=str(path), full_page=full_page)


def shots_dir(name: str = "") -> Path:
    """The screenshot folder ``name`` under tempdir/auditatlas-browser (created), outside the repo."""
    folder = SHOTS / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Page coordinates of one heatmap cell, read from the live plotly figure: the clickable marker
# whose customdata is (backbone, source action, later action).
CELL_XY = """([bb, src, later]) => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    for (const t of gd._fullData || []) {
      if (t.type !== 'scatter' || !t.customdata) continue;
      for (let i = 0; i < t.customdata.length; i++) {
        const c = t.customdata[i];
        if (c[0] !== bb || c[1] !== src || c[2] !== later) continue;
        const xa = gd._fullLayout[t.xaxis.replace('x', 'xaxis')], ya = gd._fullLayout[t.yaxis.replace('y', 'yaxis')];
        const box = gd.getBoundingClientRect();
        return [box.left + xa._offset + xa.l2p(xa.d2c(t.x[i])), box.top + ya._offset + ya.l2p(ya.d2c(t.y[i]))];
      }
    }
  }
  return null;
}"""


# Where a Streamlit dataframe's cell stands, read from the accessible table glide-data-grid keeps
# beside its canvas: the 0-based column under the header that starts with ``column`` and the
# 0-based row whose first cell contains ``row``, and the cell now selected (or null).
_GRID_CELLS = """([grid, column, row]) => {
  const heads = Array.from(grid.querySelectorAll('th[role=columnheader]'));
  const col = heads.findIndex(h => h.innerText.trim().startsWith(column));
  const firsts = Array.from(grid.querySelectorAll('td[id^="glide-cell-0-"]'));
  const hit = firsts.find(td => td.innerText.includes(row));
  const chosen = grid.querySelector('td[id^="glide-cell-"][aria-selected=true]');
  const at = chosen ? chosen.id.split('-').slice(2).map(Number) : null;
  return {col: col, row: hit ? Number(hit.id.split('-')[3]) : -1, at: at};
}"""


def choose_cell(page, grid, column: str, row: str, reached: str, tries: int = 3) -> None:
    """Choose one cell of a Streamlit dataframe with the keyboard, until the page's JS expression
    ``reached`` holds (the choice is in the URL).

    The cell is found by its column header and its row's first cell in the grid's accessible
    table, and every move is read back from it, so no pixel depends on where charts drawn above
    have pushed the grid. A rerun that takes the focus mid-way (a busy machine) is met by starting
    again from whichever cell the grid says is selected."""
    for attempt in range(tries):
        where = _grid_selected(page, grid, column, row)
        at = where["at"]
        if at is None:
            # No cell selected yet: focus the grid, then click its first cell (after a click
            # elsewhere on the page, a first click only takes the focus: click until it selects).
            grid.locator("#glide-cell-0-0").focus()
            for _ in range(4):
                page.wait_for_timeout(500)
                at = _grid_selected(page, grid, column, row)["at"]
                if at is not None:
                    break
                box = grid.bounding_box()
                page.mouse.click(box["x"] + 30, box["y"] + 35 + 17)  # header 35 px, rows 35 px
            assert at is not None, "the grid took no selection"
        else:
            grid.locator(f"#glide-cell-{at[0]}-{at[1]}").focus()
        across, down = where["col"] - at[0], where["row"] - at[1]
        keys = ["ArrowRight" if across > 0 else "ArrowLeft"] * abs(across)
        keys += ["ArrowDown" if down > 0 else "ArrowUp"] * abs(down)
        for key in keys:
            page.keyboard.press(key)
            page.wait_for_timeout(100)
        try:
            # A choice that reaches the link does so within a rerun (1-3 s under the suite's load).
            page.wait_for_function(reached, timeout=15_000)
            return
        except Exception:  # noqa: BLE001 - tried again from where the grid stands; the last miss fails
            if attempt == tries - 1:
                raise
            page.wait_for_timeout(1_000)  # the accessible table follows the canvas a moment later


def _grid_selected(page, grid, column: str, row: str) -> dict:
    where = page.evaluate(_GRID_CELLS, [grid.element_handle(), column, row])
    assert where["col"] >= 0 and where["row"] >= 0, f"no cell {column!r} x {row!r} in the grid: {where}"
    return where
