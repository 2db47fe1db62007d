"""Real headless Chromium against a real Streamlit server: the pieces every browser test shares.

Debian's chromium (``make test`` installs it when missing); never a browser download. Every
request is recorded, and one that leaves localhost is a failure: offline means offline.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


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
    """The app on ``store`` at http://127.0.0.1:PORT, stopped on exit."""
    require_chromium()
    port = free_port()
    env = {**os.environ, "AUDITATLAS_STORE": str(store)}
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
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def chromium() -> Iterator:
    from playwright.sync_api import sync_playwright

    require_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser, outside: list[str], width: int = 1400, height: int = 1800):
    """A page that appends every request leaving localhost to ``outside``."""
    page = browser.new_page(viewport={"width": width, "height": height})

    def record(request):
        if request.url.startswith(("data:", "blob:", "about:")):
            return
        if (urlparse(request.url).hostname or "") not in LOCAL_HOSTS:
            outside.append(request.url)

    page.on("request", record)
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


def exceptions_on(page) -> list[str]:
    """Texts of Streamlit exception boxes on the page (a traceback shown to the user)."""
    boxes = page.locator('[data-testid="stException"]')
    return [boxes.nth(i).inner_text() for i in range(boxes.count())]
