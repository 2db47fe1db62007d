"""Load: N concurrent browser sessions over every page of the app, on one store.

    .venv/bin/python bench/load.py --store /tmp/store100k [--sessions 20] [--rounds 1] [--out DIR]

Starts the app on ``--store`` (a real Streamlit server on 127.0.0.1), opens ``--sessions``
headless Chromium pages at once (one browser context each, so each is its own Streamlit
session), and has every session visit every page in turn. A visit counts as done when the page
has rendered and stopped changing (no spinner, no skeleton, stable text for 1.5 s); it counts
as an error when Streamlit shows an exception box or an error message, or the visit times out.
Reports per page the median and worst visit time, the errors, and the server's peak resident
memory (sampled every 0.2 s). Not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking"]
PAGES = ["/", "/boards", "/explorer", "/detectors", "/propagation", "/rescore"]

SETTLED = """() => new Promise(resolve => {
    const size = () => document.body.innerText.length;
    const busy = () => document.querySelector('[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-testid="stStatusWidget"]');
    let last = size();
    setTimeout(() => resolve(!busy() && size() === last && size() > 200), 1500);
})"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(store: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "AUDITATLAS_STORE": str(store)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
                             "--server.headless", "true", "--server.address", "127.0.0.1"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(180):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("streamlit did not start")


class Peak(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.proc = psutil.Process(pid)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except Exception:  # noqa: BLE001
                return
            self.stop.wait(0.2)


async def session(browser, url: str, pages: list[str], rounds: int, timings: dict, errors: list) -> None:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    try:
        for _ in range(rounds):
            for path in pages:
                t0 = time.perf_counter()
                try:
                    await page.goto(url + path, timeout=300_000)
                    await page.wait_for_function(SETTLED, timeout=300_000, polling=500)
                    broken = await page.locator('[data-testid="stException"]').count()
                    if broken:
                        errors.append({"page": path, "error": (await page.locator('[data-testid="stException"]').first.inner_text())[:300]})
                except Exception as exc:  # noqa: BLE001 - a timeout is an error of the run, recorded
                    errors.append({"page": path, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
                timings.setdefault(path, []).append(time.perf_counter() - t0)
    finally:
        await context.close()


async def run(url: str, sessions: int, rounds: int) -> tuple[dict, list]:
    from playwright.async_api import async_playwright

    timings: dict[str, list[float]] = {}
    errors: list[dict] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        # Each session starts on a different page, so every page is under load at once.
        orders = [PAGES[i % len(PAGES):] + PAGES[:i % len(PAGES)] for i in range(sessions)]
        await asyncio.gather(*(session(browser, url, order, rounds, timings, errors) for order in orders))
        await browser.close()
    return timings, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "load")
    args = parser.parse_args()
    proc, url = start_server(args.store)
    peak = Peak(proc.pid)
    peak.start()
    try:
        t0 = time.perf_counter()
        timings, errors = asyncio.run(run(url, args.sessions, args.rounds))
        wall = time.perf_counter() - t0
    finally:
        peak.stop.set()
        proc.terminate()
        proc.wait(30)
    report = {
        "store": str(args.store), "sessions": args.sessions, "rounds": args.rounds, "wall_s": round(wall, 1),
        "server_peak_rss_mb": round(peak.peak / 2**20), "errors": errors, "load_avg": os.getloadavg(),
        "pages": {p: {"visits": len(t), "median_s": round(statistics.median(t), 2), "max_s": round(max(t), 2)}
                  for p, t in timings.items()},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"load-{args.sessions}.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
