"""Real headless Chromium against the real app: the Overview and each board tab render, a link
restores the slice, and no request leaves localhost (offline means offline in the browser)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import REPO

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(tempfile.gettempdir()) / "auditatlas-browser"  # screenshots stay outside the repo tree
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(app_store):
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is missing: `make test` installs it (apt-get install chromium).")
        pytest.skip("Debian chromium is not installed")
    port = _free_port()
    env = {**os.environ, "AUDITATLAS_STORE": str(app_store)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
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
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _page(browser, outside: list[str]):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})

    def record(request):
        host = urlparse(request.url).hostname or ""
        if request.url.startswith(("data:", "blob:", "about:")):
            return
        if host not in LOCAL_HOSTS:
            outside.append(request.url)

    page.on("request", record)
    return page


def _wait_idle(page, text: str, timeout: float = 180_000) -> None:
    """Wait for ``text``, then until the page stops changing (no skeletons, no "Scoring…"
    spinner text, stable DOM)."""
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout)
    page.wait_for_function("() => !document.body.innerText.includes('Scoring ')", timeout=timeout, polling=500)
    page.wait_for_function(
        """() => new Promise(resolve => {
            const size = () => document.body.innerText.length;
            const busy = () => document.querySelector('[data-testid="stSkeleton"], [data-testid="stSpinner"]');
            let last = size();
            setTimeout(() => resolve(!busy() && size() === last), 1500);
        })""",
        timeout=timeout, polling=500,
    )


def test_overview_renders_offline(server, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/")
    _wait_idle(page, "Action success rate per backbone")
    page.get_by_text("Simulated data", exact=False).first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "overview.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


def test_link_restores_the_slice(server, browser):
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/?backbone=GPT-4.1&difficulty=easy")
    _wait_idle(page, "Action success rate per backbone")
    page.get_by_text("backbone (llm) in GPT-4.1; difficulty in easy", exact=False).first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "overview-sliced.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


def test_choosing_a_filter_updates_the_url(server, browser):
    """The interactive path: picking a backbone in the sidebar filters the page and the link."""
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/")
    _wait_idle(page, "Action success rate per backbone")
    # Streamlit marks the app inert while a run is still settling; wait until it is live.
    page.wait_for_function("""() => { const el = document.querySelector('input[aria-label="Backbone (LLM)"]');
                                      return el && !el.closest('[inert]'); }""", timeout=180_000, polling=500)
    page.get_by_role("combobox", name="Backbone (LLM)").click(timeout=60_000)
    page.get_by_role("option", name="GPT-5.4", exact=True).click()
    page.keyboard.press("Escape")
    page.wait_for_url("**backbone=GPT-5.4**", timeout=60_000)
    _wait_idle(page, "backbone (llm) in GPT-5.4")
    assert not outside, f"requests left localhost: {outside}"


@pytest.mark.parametrize("tab", ["PRE", "LIVE", "POST"])
def test_board_tabs_render(server, browser, tab):
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/boards")
    _wait_idle(page, "Boards")
    page.get_by_role("tab", name=tab, exact=True).click()
    if tab != "PRE":  # the default tab keeps the URL clean
        page.wait_for_url(f"**tab={tab}**", timeout=60_000)
    _wait_idle(page, "rests on")
    page.screenshot(path=str(ARTIFACTS / f"boards-{tab.lower()}.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


def test_live_trajectories_for_taubench_from_a_link(server, browser):
    """LIVE on the real tau-bench runs, opened straight from a shared link."""
    from conftest import TAUBENCH

    if not TAUBENCH.exists():
        pytest.skip("needs ../shared/data/tau-bench")
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/boards?tab=LIVE&board_live_corpus=taubench")
    _wait_idle(page, "rests on")
    page.get_by_text("on taubench", exact=False).first.wait_for()
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=120_000)  # the trajectories
    _wait_idle(page, "rests on")
    page.screenshot(path=str(ARTIFACTS / "boards-live-taubench.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"
