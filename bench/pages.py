"""Time to content of every page in a real browser, cold and warm.

    .venv/bin/python bench/pages.py --store data/store [--rounds 1] [--shots DIR]

Cold: a new server on the store, started as `make run` starts it (``components/serve.py``: its caches
empty; it imports the pages' modules while it waits), a new headless Chromium profile, the
page opened straight by its link, as a reviewer opens a link from a paper: ``--settle``
seconds after the server answers (0: at once, the visit racing the warm-up). Warm: the same link opened again in a new tab of that browser on that server.
Each figure is the wall time from navigation to:

- ``content``: the page's title and its first content element (a table, a chart, a graph's
  frame, a metric or a message box) drawn;
- ``settled``: no spinner, skeleton, running script (Streamlit's running icon) or stale
  element left, and the text unchanged for 1 s (the settle second is not counted). The check
  polls and returns a plain value: Playwright's wait_for_function ends on the first promise
  whatever it resolves to, so a check returning one made ``settled`` ``content`` plus at most
  one poll (a page computing behind a spinner for 15 s counted as settled).

In-app reopen: a new tab boots Streamlit's whole page (its bundle, a websocket, a session), so
it can never beat the bare page's boot. A reader inside the app reopens a page through the
app's own navigation: in the tab already showing the page (the warm tab), a click on another
page's sidebar link (``/tour``; ``/`` for the tour itself), then on this page's sidebar link,
in the same tab and the same Streamlit session: a rerun over the open websocket. Timed from
that second click to ``content`` as above, read in the main area only, with the page's own
title (the one the warm visit showed) and no element left stale (``data-stale``: drawn by the
previous page and not yet replaced). A sidebar link carries no URL parameters, but the page's
widgets bound to the URL keep their values in the session, so the page comes back with the
link's view (the URL it lands on is recorded: it must be the link's). ``--reopens`` cycles are
timed, each recorded.

The reference runs, in the same process and the same way: a bare Streamlit page (one title and
one table, ``bench/bare_page.py``) served cold and warm, so a page's figure reads as a ratio to
what Streamlit and Chromium alone cost on this machine now; a bare chart page (a title and one
plotly heatmap, ``bench/bare_chart.py``), what a page that opens on a chart costs before any of
ours (Streamlit's plotly.js module is loaded and run on a tab's first chart); and for the in-app reopen, two such
bare pages behind ``st.navigation`` (``bench/bare_app.py``), switched between through the sidebar
as above: what Streamlit and Chromium alone cost for a page switch (it also gets a cold and a
warm figure, with the navigation in its sidebar). Then the everyday clicks (bench/clicks.py), warm,
each beside a bare page's button rerun and a bare page's tab switch that draws a board's worth of
elements (``bench/bare_tabs.py``), timed in the same run. Not a test: nothing is asserted; the load
(``os.getloadavg``) is printed beside the figures. Every request leaving localhost is counted
(it must be 0).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import clicks  # noqa: E402
from components import serve  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
CONTENT = ('[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stPlotlyChart"], '
           '[data-testid="stIFrame"], iframe, [data-testid="stMetric"], [data-testid="stAlert"], '
           '[data-testid="stCode"]')
# Still at work: a skeleton or spinner drawn, or the script still running (Streamlit's running
# icon: st.spinner shows only after half a second, which a busy server sends late) or an element
# left stale by the run before.
BUSY = ('[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-testid="stStatusWidgetRunningIcon"], '
        '[data-stale="true"]')

# The links timed: each page's default view, plus the views a reviewer is sent to.
LINKS = ("/", "/boards", "/boards?tab=LIVE", "/boards?tab=POST", "/explorer", "/explorer?run={run}",
         "/search?q=error", "/patterns", "/propagation", "/detectors", "/rescore", "/review", "/tour")


# Polled (Playwright settles on the first promise a predicate returns, whatever it resolves to,
# so a promise-returning check would end after its first second): the text length and the last
# moment it changed or something was busy, kept on the window between polls.
SETTLED = f"""() => {{
    const now = performance.now(), size = document.body.innerText.length;
    const s = window.__settled || (window.__settled = {{size: -1, since: now}});
    const busy = document.querySelector('{BUSY}');
    if (busy || size !== s.size) {{ s.size = size; s.since = now; return false; }}
    return now - s.since >= 1000;
}}"""
# The page's own title and first content element, in the main area, none of it left stale from
# the page shown before (a page switch keeps the sidebar's elements until the rerun replaces them).
FRESH = f"""title => {{
    if (document.querySelector('[data-stale="true"]')) return false;
    const main = document.querySelector('[data-testid="stMain"]') || document.body;
    const h1 = main.querySelector('h1');
    if (!h1 || !h1.innerText.trim().startsWith(title)) return false;
    return [...main.querySelectorAll('{CONTENT}')].some(e => e.offsetHeight > 0);
}}"""
# Click the sidebar navigation's link to a path (Streamlit switches pages over the websocket).
NAV_CLICK = """path => {
    const norm = p => p.replace(/\\/+$/, '') || '/';
    const links = [...document.querySelectorAll('[data-testid="stSidebarNav"] a')];
    const link = links.find(a => norm(new URL(a.href).pathname) === norm(path));
    if (!link) throw new Error('no sidebar link to ' + path + ' among ' + links.map(a => a.href).join(' '));
    link.click();
}"""


def new_tab(context, outside: list[str]):
    page = context.new_page()
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.on("request", lambda r: outside.append(r.url) if (urlparse(r.url).hostname or "") not in
            {"127.0.0.1", "localhost", ""} and not r.url.startswith(("data:", "blob:", "about:")) else None)
    return page


def wait_settled(page) -> None:
    page.evaluate("() => { delete window.__settled; }")
    page.wait_for_function(SETTLED, timeout=300_000, polling=100)


def finish(page, t0: float, content: float, shot: Path | None) -> dict:
    """``settled`` after ``content``, an optional screenshot, the exception boxes."""
    wait_settled(page)
    settled = time.perf_counter() - t0 - 1.0
    if shot is not None:
        page.screenshot(path=str(shot), timeout=60_000)
    errors = page.locator('[data-testid="stException"]').count()
    return {"content_s": round(content, 2), "settled_s": round(max(settled, content), 2), "exceptions": errors}


def visit(context, url: str, outside: list[str], shot: Path | None, keep: bool = False):
    """A link opened in a new tab: its figures (and the tab, left open, when ``keep``)."""
    page = new_tab(context, outside)
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_function(f"""() => document.querySelector('h1') &&
        [...document.querySelectorAll('{CONTENT}')].some(e => e.offsetHeight > 0)""", timeout=300_000, polling=50)
    figures = finish(page, t0, time.perf_counter() - t0, shot)
    if keep:
        return figures, page
    page.close()
    return figures


def title_of(page) -> str:
    return page.evaluate("""() => ((document.querySelector('[data-testid="stMain"]') || document.body)
        .querySelector('h1')?.innerText || '').trim()""")


def path_of(link: str) -> str:
    return urlparse(link).path or "/"


def reopen(page, link: str, away: str, title: str, shot: Path | None) -> dict:
    """In ``page`` (showing ``link``): the sidebar to ``away``, then the sidebar back to the
    page; figures from the click back. ``url``: where it landed."""
    away_title = {"/": "Overview", "/tour": "Tour", "/bare-b": "Bare page B"}[away]
    page.evaluate(NAV_CLICK, away)
    page.wait_for_function(FRESH, arg=away_title, timeout=300_000, polling=50)
    wait_settled(page)
    t0 = time.perf_counter()
    page.evaluate(NAV_CLICK, path_of(link))
    page.wait_for_function(FRESH, arg=title, timeout=300_000, polling=50)
    figures = finish(page, t0, time.perf_counter() - t0, shot)
    return {**figures, "url": page.url.split("//", 1)[-1].split("/", 1)[-1]}


def away_from(link: str) -> str:
    return "/" if path_of(link) == "/tour" else "/tour"


def cold_warm(script: Path, store: Path | None, link: str, shots: Path | None, tag: str, settle: float,
              reopens: int = 0, away: str | None = None, repo: Path = REPO) -> dict:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    loads = [os.getloadavg()[0]]
    with serve.running(store, None if script.name == "app.py" else script, repo=repo) as base, \
            sync_playwright() as pw:
        time.sleep(settle)  # a reader opens the link some time after the server started
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context()  # a new profile: no HTTP or code cache from an earlier visit
            cold = visit(context, base + link, outside, shots / f"{tag}-cold.png" if shots else None)
            warm, tab = visit(context, base + link, outside, shots / f"{tag}-warm.png" if shots else None, keep=True)
            row = {"link": link, "cold": cold, "warm": warm}
            if reopens:
                title = title_of(tab)
                away = away or away_from(link)
                row["reopen"] = [reopen(tab, link, away, title, shots / f"{tag}-reopen-{k}.png" if shots and k == 0
                                        else None) for k in range(reopens)]
        finally:
            browser.close()
    loads.append(os.getloadavg()[0])
    return {**row, "outside": len(outside), "load": loads[-1], "load_range": [min(loads), max(loads)]}


def a_run(store: Path) -> str:
    """A failed run of the store (the Explorer's run view is timed on it)."""
    sys.path.insert(0, str(REPO))
    import queries

    con = queries.connect(store)
    try:
        return str(con.execute("SELECT run_id FROM runs WHERE outcome = 'failure' ORDER BY run_id LIMIT 1").fetchone()[0])
    finally:
        con.close()


def table(rows: list[dict]) -> str:
    """The figures as a Markdown table: content seconds, each with its ratio to the bare
    references of the same round (cold and warm to the bare page, reopen to the bare app)."""
    bare = app = chart = None  # the references of the round a row belongs to (they open each round)

    def ratio(value: float, ref: dict | None, key: str) -> str:
        if ref is None or key not in ref:
            return "–"
        base = ref[key] if key != "reopen" else ref[key][0]
        return f"{value / base['content_s']:.1f}" if base["content_s"] else "–"

    out = ["| link | cold | new-tab warm | in-app reopen (1st, 2nd) | cold / bare | warm / bare | reopen / bare app | "
           "cold / bare chart | load | lands on |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["page"].startswith("bare Streamlit page"):
            bare = r
        elif r["page"].startswith("bare two-page app"):
            app = r
        elif r["page"].startswith("bare chart page"):
            chart = r
        reopen_s = r.get("reopen") or []
        first = reopen_s[0]["content_s"] if reopen_s else None
        link = r["page"] if r["page"].startswith("bare") else f"`{r['link'][:40]}{'…' if len(r['link']) > 40 else ''}`"
        if r.get("repo"):
            link += f" ({Path(r['repo']).name})"
        lands = "" if not reopen_s or r["page"].startswith("bare") else (
            "the link" if all(unquote(x["url"]).split("?")[0] == r["link"].lstrip("/").split("?")[0] and
                              unquote(x["url"]).split("?")[1:] == r["link"].split("?")[1:] for x in reopen_s)
            else "`/" + reopen_s[0]["url"][:30] + "`")
        out.append(" | ".join([
            f"| {link}", f"{r['cold']['content_s']:.2f}", f"{r['warm']['content_s']:.2f}",
            ", ".join(f"{x['content_s']:.2f}" for x in reopen_s) or "–",
            ratio(r["cold"]["content_s"], bare, "cold"), ratio(r["warm"]["content_s"], bare, "warm"),
            ratio(first, app, "reopen") if first is not None else "–",
            ratio(r["cold"]["content_s"], chart, "cold"),
            "–".join(f"{x:.1f}" for x in r.get("load_range", [r["load"]])), lands]) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="the store served (required unless --table)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="links to time (default: all)")
    parser.add_argument("--shots", type=Path, help="keep a screenshot of every visit here")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds between the server's start and the cold visit (components/serve.py warms meanwhile)")
    parser.add_argument("--reopens", type=int, default=2,
                        help="in-app reopens timed per link, in its warm tab (0: none)")
    parser.add_argument("--repo", type=Path, nargs="*",
                        help="checkouts whose app is served, each in turn per link (before/after interleaved; "
                             "default: this one)")
    parser.add_argument("--no-bare", action="store_true", help="leave out the bare references")
    parser.add_argument("--clicks", type=int, default=5,
                        help="each everyday click timed this many times, warm, beside a bare page's button rerun "
                             "(bench/clicks.py; 0: none)")
    parser.add_argument("--clicks-only", action="store_true", help="time the clicks alone, no page opens")
    parser.add_argument("--verdicts", action="store_true", help="time a /review verdict too (it writes to the store)")
    parser.add_argument("--click", nargs="*", help="time only the clicks whose name holds one of these words "
                                                     "(e.g. boards review)")
    parser.add_argument("--table", type=Path, nargs="*", help="print the table of earlier runs' JSON files, run nothing")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "pages.json")
    args = parser.parse_args()
    if args.table is not None:
        for path in args.table:
            print(f"{path}:\n{table(json.loads(path.read_text()))}\n")
        return
    if args.store is None:
        parser.error("--store is required")
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.clicks_only:
        clicked = time_clicks(args)
        print(clicks.table(clicked))
        return
    run = a_run(args.store)
    links = [link.format(run=run) for link in (args.only or LINKS)]
    rows = []
    for round_ in range(args.rounds):
        if not args.no_bare:
            rows.append({"page": "bare Streamlit page (reference)",
                         **cold_warm(REPO / "bench" / "bare_page.py", None, "/", args.shots, f"bare-{round_}",
                                     args.settle)})
            print(json.dumps(rows[-1]), flush=True)
            rows.append({"page": "bare chart page (reference)",
                         **cold_warm(REPO / "bench" / "bare_chart.py", None, "/", args.shots, f"bare-chart-{round_}",
                                     args.settle)})
            print(json.dumps(rows[-1]), flush=True)
            if args.reopens:
                rows.append({"page": "bare two-page app (reference)",
                             **cold_warm(REPO / "bench" / "bare_app.py", None, "/", args.shots, f"bare-app-{round_}",
                                         args.settle, args.reopens, away="/bare-b")})
                print(json.dumps(rows[-1]), flush=True)
        for i, link in enumerate(links):
            for repo in args.repo or [REPO]:
                tag = f"{i:02d}-{round_}" + (f"-{repo.name}" if args.repo else "")
                rows.append({"page": link, **cold_warm(REPO / "app.py", args.store, link, args.shots, tag, args.settle,
                                                       args.reopens, repo=repo),
                             **({"repo": str(repo)} if args.repo else {})})
                print(json.dumps(rows[-1]), flush=True)
    args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    if args.clicks:
        print(clicks.table(time_clicks(args)))


def time_clicks(args) -> list[dict]:
    rows = clicks.run(args.store, CHROMIUM, ARGS, args.clicks or 5, args.verdicts, args.click)
    args.out.with_name(args.out.stem + "-clicks.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
