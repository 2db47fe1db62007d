"""Real headless Chromium on the Propagation page: clicking a heatmap cell lists the chains
behind it (and the link follows), a shared link opens the same list, and nothing leaves
localhost."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from conftest import REPO

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

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


@pytest.fixture(scope="module")
def server(app_store):
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Debian chromium is missing: `make test` installs it (apt-get install chromium).")
        pytest.skip("Debian chromium is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
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


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("propagation-screenshots")


def _page(browser, outside: list[str]):
    page = browser.new_page(viewport={"width": 1500, "height": 2400})

    def record(request):
        if request.url.startswith(("data:", "blob:", "about:")):
            return
        if (urlparse(request.url).hostname or "") not in LOCAL_HOSTS:
            outside.append(request.url)

    page.on("request", record)
    return page


def _wait_idle(page, text: str, timeout: float = 180_000) -> None:
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


def test_clicking_a_cell_lists_its_chains(server, browser, shots):
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/propagation")
    _wait_idle(page, "Propagation heatmap per backbone")
    page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
    page.wait_for_function("""() => { const el = document.querySelector('.js-plotly-plot');
                                      return el && !el.closest('[inert]'); }""", timeout=180_000, polling=500)
    xy = page.evaluate(CELL_XY, ["GPT-4.1", "SOLVE_CLUE", "APPLY_DELTA"])
    assert xy, "no clickable GPT-4.1 SOLVE_CLUE -> APPLY_DELTA cell in the heatmap"
    page.mouse.move(*xy)
    page.mouse.click(*xy)
    # The click sets the three cell selectors, which are bound to the URL.
    page.wait_for_function("() => location.search.includes('later_action=APPLY_DELTA')", timeout=60_000, polling=250)
    query = parse_qs(urlparse(page.evaluate("location.href")).query)
    assert query["cell_backbone"] == ["GPT-4.1"] and query["src_action"] == ["SOLVE_CLUE"]
    _wait_idle(page, "are followed by a failed APPLY_DELTA step")
    page.get_by_text("each links to the trace explorer at the source step", exact=False).first.wait_for()
    page.screenshot(path=str(shots / "propagation-cell.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


def test_a_shared_link_opens_the_same_chain_list(server, browser, shots):
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/propagation?cell_backbone=GPT-4.1&src_action=SOLVE_CLUE&later_action=APPLY_DELTA")
    _wait_idle(page, "are followed by a failed APPLY_DELTA step")
    page.get_by_text("GPT-4.1", exact=False).first.wait_for()
    page.get_by_text("each links to the trace explorer at the source step", exact=False).first.wait_for()
    page.locator("[data-testid='stDataFrame']:visible").first.wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "propagation-link.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"


@pytest.mark.parametrize("tab", ["Chains", "Recall by role", "Failure modes"])
def test_tabs_render(server, browser, shots, tab):
    outside: list[str] = []
    page = _page(browser, outside)
    page.goto(server + "/propagation")
    _wait_idle(page, "Propagation heatmap per backbone")
    page.get_by_role("tab", name=tab, exact=True).click()
    page.wait_for_function("() => location.search.includes('tab=')", timeout=60_000, polling=250)
    heading = {"Chains": "Chain browser", "Recall by role": "Recall by chain role",
               "Failure modes": "MAST failure modes per backbone"}[tab]
    _wait_idle(page, heading)
    page.screenshot(path=str(shots / f"propagation-{tab.split()[0].lower()}.png"), full_page=True)
    assert not outside, f"requests left localhost: {outside}"
