"""Real headless Chromium on the explorer: deep links to a Who&When run and to a simulated
MAADBench run show the graph (drawn by vis-network, offline), the step detail and the judges'
strip; choosing a step updates the link; no request leaves localhost.

Screenshots go to a temporary folder outside the repository tree.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pytest

from conftest import REPO, WHOWHEN

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(tempfile.gettempdir()) / "auditatlas-browser"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is missing: `make test` installs it (apt-get install chromium).")
        pytest.skip("Debian chromium is not installed")


@contextmanager
def serve(store: Path):
    """The real app on ``store``, on a free local port; yields its base URL."""
    require_chromium()
    port = _free_port()
    env = {**os.environ, "AUDITATLAS_STORE": str(store)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            proc.kill()
            pytest.fail("streamlit did not start: " + proc.stdout.read().decode(errors="replace")[-2000:])
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def open_page(browser, outside: list[str], dialogs: list[str] | None = None, height: int = 2600):
    """A page that records every request leaving localhost (and every dialog, dismissed)."""
    page = browser.new_page(viewport={"width": 1500, "height": height})

    def record(request):
        if request.url.startswith(("data:", "blob:", "about:")):
            return
        if (urlparse(request.url).hostname or "") not in LOCAL_HOSTS:
            outside.append(request.url)

    page.on("request", record)
    if dialogs is not None:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return page


def wait_idle(page, text: str, timeout: float = 180_000) -> None:
    """Wait for ``text``, then until the page stops changing (no skeleton or spinner, stable text)."""
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout)
    page.wait_for_function(
        """() => new Promise(resolve => {
            const size = () => document.body.innerText.length;
            const busy = () => document.querySelector('[data-testid="stSkeleton"], [data-testid="stSpinner"]');
            let last = size();
            setTimeout(() => resolve(!busy() && size() === last), 1500);
        })""",
        timeout=timeout, polling=500,
    )


def graph_frame(page, timeout: float = 60_000):
    """The frame holding the run graph, once vis-network has drawn it."""
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


@pytest.fixture(scope="module")
def server(app_store):
    with serve(app_store) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as b:
        yield b


def test_whowhen_deep_link(server, browser):
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen")
    import json

    n = len(json.loads((WHOWHEN / "1.json").read_text())["history"])
    outside: list[str] = []
    page = open_page(browser, outside)
    run, judge = "whowhen:Algorithm-Generated/1", "whowhen:judge:all_at_once:gpt-5.4"
    page.goto(f"{server}/explorer?run={quote(run, safe='')}&step=1&set={quote(judge, safe='')}&top_k=1")
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
    page.screenshot(path=str(_shot("explorer-whowhen.png")), full_page=True)

    # The interactive path: choosing another step in the selector updates the link and the graph.
    page.get_by_role("combobox", name="Step").click(timeout=60_000)
    page.get_by_role("option", name="3 ·", exact=False).first.click()
    page.wait_for_url("**step=3**", timeout=60_000)
    wait_idle(page, "Judges on this run")
    frame = graph_frame(page)
    assert frame.evaluate("() => window.traceNetwork.getSelectedNodes()") == ["3"]
    assert parse_qs(urlparse(page.url).query)["set"] == [judge]
    # Showing the inferred context edges (toggle) puts them in the link and in the graph.
    page.get_by_text("Show inferred full-context edges").click()
    page.wait_for_url("**context=1**", timeout=60_000)
    wait_idle(page, "Judges on this run")
    frame = graph_frame(page)
    assert frame.evaluate("() => window.traceNetwork.body.data.edges.length") == n * (n - 1) // 2 + n - 1
    assert not outside, f"requests left localhost: {outside}"


def test_simulated_maadbench_deep_link(server, browser, app_store):
    import queries

    row = queries.run("explorer_runs", {
        "slice": {"corpus": ["maadbench-sim"]}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [],
        "f_difficulty": ["hard"], "f_outcome": [], "min_steps": None, "max_steps": None, "sort": "steps",
        "descending": True, "limit": 1, "offset": 0}, root=app_store).iloc[0]
    outside: list[str] = []
    page = open_page(browser, outside)
    page.goto(f"{server}/explorer?corpus=maadbench-sim&run={quote(row['run'], safe='')}&step=2&color=action")
    wait_idle(page, "Step detail")
    frame = graph_frame(page)
    assert frame.evaluate("() => window.traceNetwork.body.data.nodes.length") == int(row["steps"])
    frame.get_by_text("fill = action", exact=False).wait_for()
    page.get_by_text("Input text").first.wait_for()
    page.screenshot(path=str(_shot("explorer-maadbench-sim.png")), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


def test_search_opens_a_step(server, browser):
    outside: list[str] = []
    page = open_page(browser, outside)
    page.goto(f"{server}/explorer?corpus=maadbench-sim&q=compass")
    wait_idle(page, "steps match")
    page.screenshot(path=str(_shot("explorer-search.png")), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


def _shot(name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / name
