"""Everyday clicks, warm, beside a bare Streamlit page's button rerun in the same run (bench/pages.py
runs them; alone: ``.venv/bin/python bench/pages.py --store STORE --clicks-only``).

Each click is timed in a tab that already shows its page (opened, settled, and the click's target
visited once, so the server's caches hold what a reader's second look would find): from the
click to its content drawn (the text it leads to shown, nothing stale, no script running).
The references: ``bench/bare_button.py``, a title, a table and a button that reruns the page,
clicked the same way; and ``bench/bare_tabs.py``, a tab switch on a bare page whose tabs each
hold a board's worth of elements (what Streamlit alone costs a click that draws that much).
A verdict writes to the store: ``--verdicts`` times one only on a store you mean to write to
(a copy).
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]
from browser_support import choose_cell  # noqa: E402 - a table's cell chosen as the browser tests choose it

# Drawn and current: the text shown (in the page, or as a chart's title), nothing stale from the
# run before, no script running.
DONE = """text => {
    if (document.querySelector('[data-stale="true"], [data-testid="stStatusWidgetRunningIcon"], '
                               + '[data-testid="stSkeleton"], [data-testid="stSpinner"]')) return false;
    return document.body.innerText.includes(text)
        || [...document.querySelectorAll('svg text')].some(t => t.textContent === text);  // a chart's title
}"""
@dataclass(frozen=True)
class Click:
    """One everyday click: the page it starts on, what it does, and the text its content shows
    (``back``: the click that returns the page to where it started, for the next repeat)."""

    name: str
    link: str
    click: Callable  # (page) -> None, the click itself
    shows: str
    back: Callable | None = None
    back_shows: str | None = None


def _tab(name: str) -> Callable:
    return lambda page: page.get_by_role("tab", name=name, exact=True).click()


def _button(name: str) -> Callable:
    return lambda page: page.get_by_role("button", name=name).first.click()  # its shortcut key is in its name


def _grid_cell(table: str, column: str, row: str, key: str) -> Callable:
    """The cell under ``column`` in ``row`` of the coloured table keyed ``table``, chosen as a
    reader would with the keyboard: one ``key`` from the cell chosen before (the click's timed
    part: the chosen cell focused, the key pressed), or, with none chosen yet (the warm-up
    click), found and reached as the browser tests reach a cell."""
    def click(page) -> None:
        grid = page.locator(f"[class*='st-key-table-{table}']").first
        chosen = grid.locator('td[id^="glide-cell-"][aria-selected=true]')
        if chosen.count():
            chosen.first.focus()
            page.keyboard.press(key)
        else:
            choose_cell(page, grid, column, row, "() => true")
    return click


def _option(label: str, option: str) -> Callable:
    """Choose ``option`` in the selectbox labelled ``label``: the timed part is the option's click."""
    def click(page) -> None:
        page.get_by_role("combobox", name=label, exact=True).click()
        page.get_by_role("option", name=option, exact=True).click()
    return click


def _first_run(page) -> None:
    """Select the first row of the Explorer's run list (its selection box, left of the row)."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.move(box["x"] + 18, box["y"] + 35 + 17)
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)


def clicks(verdicts: bool = False) -> list[Click]:
    out = [
        Click("a /boards tab", "/boards", _tab("POST"), "POST: ", _tab("PRE"), "PRE: "),
        # Two neighbouring cells of one backbone's map in turn, one arrow key apart.
        Click("a /propagation heatmap cell", "/propagation?map_backbone=GPT-4.1",
              _grid_cell("propagation-map-", "AD", "SC · SOLVE_CLUE", "ArrowRight"),
              "are followed by a failed APPLY_DELTA step",
              _grid_cell("propagation-map-", "TC", "SC · SOLVE_CLUE", "ArrowLeft"),
              "are followed by a failed UNIT_TOOL_CALL step"),
        Click("the next /review step", "/review?queue=random&seed=0&reviewer=bench", _button("Skip"), "Step 2 of",
              _button("Previous"), "Step 1 of"),
        Click("a backbone switch (/detectors)", "/detectors?grid_backbone=GPT-4.1",
              _option("Backbone", "GPT-5.4"), "GPT-5.4", _option("Backbone", "GPT-4.1"), "GPT-4.1"),
        Click("a run in the /explorer list", "/explorer", _first_run, "Step detail"),
    ]
    if verdicts:
        out.append(Click("a /review verdict", "/review?queue=random&seed=0&reviewer=bench", _button("Normal"),
                         "Step 2 of", _button("Previous"), "Step 1 of"))
    return out


def bare_click() -> Click:
    state = {"n": 0}

    def click(page) -> None:
        state["n"] += 1
        page.get_by_role("button", name="Rerun").click()
    # The count the click leads to is read when the click is made (each repeat one more).
    return Click("bare page: a button's rerun (reference)", "/", click, "")


def bare_tab() -> Click:
    return Click("bare page: a tab holding a board's elements (reference)", "/", _tab("POST"), "POST: ",
                 _tab("PRE"), "PRE: ")


def time_click(page, click: Click, repeats: int) -> tuple[list[float], int]:
    """``repeats`` timings of ``click`` in ``page`` (already on its link and settled), and how
    many clicks were lost (a chart redrawn under the pointer takes no click: its content never
    came within 30 s; not timed, said beside the figures)."""
    from playwright.sync_api import TimeoutError as Timeout

    times, lost = [], 0
    for _ in range(repeats):
        shows = click.shows
        if not shows:  # the bare page: the next count
            now = int(page.evaluate("() => document.body.innerText.match(/clicks (\\d+)/)[1]"))
            shows = f"clicks {now + 1}"
        page.wait_for_timeout(500)  # the page's charts drawn after its script ended
        t0 = time.perf_counter()
        click.click(page)
        try:
            page.wait_for_function(DONE, arg=shows, timeout=30_000, polling=20)
            times.append(time.perf_counter() - t0)
        except Timeout:
            lost += 1
        if click.back is not None:
            _until(page, click.back, click.back_shows)
        elif click.link.startswith("/explorer"):  # the list again: its link reopened (not timed; the server stays warm)
            page.goto(page.url.split("?")[0])
            page.wait_for_function(DONE, arg="runs; page", timeout=120_000, polling=50)
    return times, lost


def _until(page, act: Callable, shows: str, attempts: int = 3) -> None:
    """``act`` until ``shows`` is drawn (the way back to the click's start; not timed)."""
    from playwright.sync_api import TimeoutError as Timeout

    for attempt in range(attempts):
        page.wait_for_timeout(500)
        act(page)
        try:
            page.wait_for_function(DONE, arg=shows, timeout=30_000, polling=50)
            return
        except Timeout:
            if attempt == attempts - 1:
                raise


def open_settled(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(DONE, arg="", timeout=300_000, polling=100)
    page.wait_for_timeout(1000)
    page.wait_for_function(DONE, arg="", timeout=300_000, polling=100)


def run(store: Path, chromium: str, chromium_args: list[str], repeats: int = 5, verdicts: bool = False,
        only: list[str] | None = None) -> list[dict]:
    """The bare reference, then every click (``only``: those whose name holds one of these
    words), each ``repeats`` times after one warm-up click not counted, in one Chromium profile."""
    from playwright.sync_api import sync_playwright

    from components import serve

    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=chromium_args)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            with serve.running(None, REPO / "bench" / "bare_button.py") as base:
                page = context.new_page()
                open_settled(page, base + "/")
                times, lost = time_click(page, bare_click(), repeats + 1)
                rows.append(_row("bare page: a button's rerun (reference)", times[1:], lost))
                page.close()
            with serve.running(None, REPO / "bench" / "bare_tabs.py") as base:
                page = context.new_page()
                open_settled(page, base + "/")
                reference = bare_tab()
                times, lost = time_click(page, reference, repeats + 1)
                rows.append(_row(reference.name, times[1:], lost))
                page.close()
            with serve.running(store) as base:
                for click in [c for c in clicks(verdicts) if not only or any(word in c.name for word in only)]:
                    page = context.new_page()
                    try:
                        open_settled(page, base + click.link)
                        times, lost = time_click(page, click, repeats + 1)
                        rows.append(_row(click.name, times[1:], lost))
                    except Exception as exc:  # noqa: BLE001 - one click's failure is a row, not the end
                        rows.append({**_row(click.name, []), "error": str(exc).splitlines()[0]})
                    finally:
                        page.close()
        finally:
            browser.close()
    return rows


def _row(name: str, times: list[float], lost: int = 0) -> dict:
    times = times or [float("nan")]
    row = {"click": name, "median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
           "max_s": round(max(times), 3), "n": len(times), "lost": lost, "load": round(os.getloadavg()[0], 2)}
    print(row, flush=True)
    return row


def table(rows: list[dict]) -> str:
    """The clicks as a Markdown table, each beside the bare rerun and the bare board tab of the same run."""
    bare = next((r for r in rows if r["click"].startswith("bare page: a button")), None)
    tab = next((r for r in rows if r["click"].startswith("bare page: a tab")), None)

    def ratio(r: dict, reference: dict | None) -> str:
        return f"{r['median_s'] / reference['median_s']:.1f}" if reference and reference["median_s"] else "–"

    out = ["| click (warm) | median s | min–max s | × bare rerun | × bare board tab | clicks (lost) | load |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['click']} | {r['median_s']:.2f} | {r['min_s']:.2f}–{r['max_s']:.2f} | {ratio(r, bare)} | "
                   f"{ratio(r, tab)} | {r['n']} ({r.get('lost', 0)}) | {r['load']:.1f} |")
    return "\n".join(out)
