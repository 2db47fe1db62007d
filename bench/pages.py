"""Time to content of every page in a real browser, cold and warm (issue 19 point 5).

    .venv/bin/python bench/pages.py --store data/store [--rounds 1] [--shots DIR]

Cold: a new server on the store, started as `make run` starts it (``components/serve.py``: its caches
empty; it imports the pages' modules while it waits), a new headless Chromium profile, the
page opened straight by its link, as a reviewer opens a link from a paper: ``--settle``
seconds after the server answers (0: at once, the visit racing the warm-up). Warm: the same link opened again in a new tab of that browser on that server.
Each figure is the wall time from navigation to:

- ``content``: the page's title and its first content element (a table, a chart, a graph's
  frame, a metric or a message box) drawn;
- ``settled``: no spinner, skeleton or "running" status left, and the text unchanged for 1 s
  (the settle second is not counted).

The reference run, in the same process and the same way: a bare Streamlit page (one title and
one table, ``bench/bare_page.py``) served cold and warm, so a page's figure reads as a ratio to
what Streamlit and Chromium alone cost on this machine now. Not a test: nothing is asserted;
the load (``os.getloadavg``) is printed beside the figures. Every request leaving localhost is
counted (it must be 0).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from components import serve  # noqa: E402
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
CONTENT = ('[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stPlotlyChart"], '
           '[data-testid="stIFrame"], iframe, [data-testid="stMetric"], [data-testid="stAlert"], '
           '[data-testid="stCode"]')
BUSY = '[data-testid="stSkeleton"], [data-testid="stSpinner"]'

# The links timed: each page's default view, plus the views a reviewer is sent to.
LINKS = ("/", "/boards", "/boards?tab=LIVE", "/boards?tab=POST", "/explorer", "/explorer?run={run}",
         "/search?q=error", "/patterns", "/propagation", "/detectors", "/rescore", "/review", "/tour")


def visit(context, url: str, outside: list[str], shot: Path | None) -> dict:
    page = context.new_page()
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.on("request", lambda r: outside.append(r.url) if (urlparse(r.url).hostname or "") not in
            {"127.0.0.1", "localhost", ""} and not r.url.startswith(("data:", "blob:", "about:")) else None)
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_function(f"""() => document.querySelector('h1') &&
        [...document.querySelectorAll('{CONTENT}')].some(e => e.offsetHeight > 0)""", timeout=300_000, polling=50)
    content = time.perf_counter() - t0
    page.wait_for_function(f"""() => new Promise(resolve => {{
        const size = () => document.body.innerText.length;
        const busy = () => document.querySelector('{BUSY}') ||
            (document.querySelector('[data-testid="stStatusWidget"]')?.innerText || '').includes('Running');
        const last = size();
        setTimeout(() => resolve(!busy() && size() === last), 1000);
    }})""", timeout=300_000, polling=100)
    settled = time.perf_counter() - t0 - 1.0
    if shot is not None:
        page.screenshot(path=str(shot), timeout=60_000)
    errors = page.locator('[data-testid="stException"]').count()
    page.close()
    return {"content_s": round(content, 2), "settled_s": round(max(settled, content), 2), "exceptions": errors}


def cold_warm(script: Path, store: Path | None, link: str, shots: Path | None, tag: str, settle: float) -> dict:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    with serve.running(store, None if script.name == "app.py" else script) as base, sync_playwright() as pw:
        time.sleep(settle)  # a reader opens the link some time after the server started
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context()  # a new profile: no HTTP or code cache from an earlier visit
            cold = visit(context, base + link, outside, shots / f"{tag}-cold.png" if shots else None)
            warm = visit(context, base + link, outside, shots / f"{tag}-warm.png" if shots else None)
        finally:
            browser.close()
    return {"link": link, "cold": cold, "warm": warm, "outside": len(outside), "load": os.getloadavg()[0]}


def a_run(store: Path) -> str:
    """A failed run of the store (the Explorer's run view is timed on it)."""
    sys.path.insert(0, str(REPO))
    import queries

    con = queries.connect(store)
    try:
        return str(con.execute("SELECT run_id FROM runs WHERE outcome = 'failure' ORDER BY run_id LIMIT 1").fetchone()[0])
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="links to time (default: all)")
    parser.add_argument("--shots", type=Path, help="keep a screenshot of every visit here")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds between the server's start and the cold visit (components/serve.py warms meanwhile)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "pages.json")
    args = parser.parse_args()
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    run = a_run(args.store)
    links = [link.format(run=run) for link in (args.only or LINKS)]
    rows = []
    for round_ in range(args.rounds):
        rows.append({"page": "bare Streamlit page (reference)",
                     **cold_warm(REPO / "bench" / "bare_page.py", None, "/", args.shots, f"bare-{round_}", args.settle)})
        print(json.dumps(rows[-1]), flush=True)
        for i, link in enumerate(links):
            rows.append({"page": link, **cold_warm(REPO / "app.py", args.store, link, args.shots, f"{i:02d}-{round_}", args.settle)})
            print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
