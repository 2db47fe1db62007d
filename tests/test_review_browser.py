"""Real headless Chromium on /review: a reviewer works through six steps
with the keyboard alone and finds every verdict stored; a second browser session reviews the
same slice at the same time, and nothing either of them gave is lost.

One Streamlit server on a copy of the small hand-made store of agreement_store.py (14 labeled
steps), two pages. What each verdict should be is read from the page itself (the run and step it
shows when the key is pressed), never from the queue code under test.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import agreement_store
import queries
from browser_support import exceptions_on, new_page, streamlit_server, wait_idle

pytestmark = pytest.mark.browser

KEYS = {"a": "anomaly", "n": "normal", "u": "unsure"}
FIRST = "anuana"  # kim's six keys: each verdict, and each more than once
SECOND = "nan"  # lee's three, each pressed right after one of kim's


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return agreement_store.build(tmp_path_factory.mktemp("review-browser") / "store")


@pytest.fixture(scope="module")
def server(store):
    with streamlit_server(store) as url:
        yield url


def _open(browser, url: str, reviewer: str, outside: list[str]):
    page = new_page(browser, outside, width=1200, height=800)
    page.goto(f"{url}/review?queue=random&seed=0&reviewer={reviewer}")
    wait_idle(page, "Step 1 of 14")
    page.get_by_role("heading", name="Review").first.click()  # the keys count outside a text field
    return page


def _shown(page) -> tuple[str, int]:
    """The run and step the page has open ("Run a, step 3": the run's short label, of run k:a)."""
    text = page.inner_text("body").replace("\u2060", "")
    found = re.search(r"Run ([abc]), step (\d+)", text)
    assert found, text[:500]
    return f"k:{found.group(1)}", int(found.group(2))


def _press(page, key: str, given: list[tuple[str, int, str]]) -> None:
    run, step = _shown(page)
    page.keyboard.press(key)
    given.append((run, step, KEYS[key]))


def _wait_step(page, number: int) -> None:
    """Until step ``number`` is shown and its rerun has finished: the counter can be drawn while
    the run and step line below it is still the last step's (stale), and a key read off that
    line would be expected on the wrong step (the once-seen failure of this test)."""
    page.get_by_text(f"Step {number} of 14", exact=True).first.wait_for(timeout=60_000)
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-stale="true"], '
                                         + '[data-testid="stSkeleton"], [data-testid="stSpinner"]')""",
        timeout=60_000, polling=100)


def test_six_verdicts_by_keyboard_and_a_second_session_lose_nothing(server, store, browser):
    outside: list[str] = []
    kim = _open(browser, server, "kim", outside)
    lee = _open(browser, server, "lee", outside)
    given: dict[str, list] = {"kim": [], "lee": []}
    for i, key in enumerate(FIRST):
        _press(kim, key, given["kim"])
        if i < len(SECOND):  # both sessions write at about the same moment
            _press(lee, SECOND[i], given["lee"])
        _wait_step(kim, i + 2)
        if i < len(SECOND):
            _wait_step(lee, i + 2)
    assert exceptions_on(kim) == [] and exceptions_on(lee) == []
    assert not outside

    history = queries.run("review_history", root=store)
    for reviewer, expected in given.items():
        mine = history[history["reviewer"] == reviewer].sort_values("reviewed_at")
        stored = [(r, int(s), v) for r, s, v in mine[["run_id", "step_idx", "verdict"]].itertuples(index=False)]
        assert stored == expected, reviewer
        assert set(mine["queue"]) == {"random"} and set(mine["seed"]) == {0}
    # Six different steps: the queue moved on after each key.
    assert len({(r, s) for r, s, _ in given["kim"]}) == len(FIRST)
    assert len(history) == len(FIRST) + len(SECOND) and history["verdict_id"].is_unique

    # Then kim reads the slice under the reviewed labels: the sidebar's choice, and the badge says
    # how far the verdicts reach (the latest per step, in the order they were stored: the two
    # sessions press at about the same moment, so which of two verdicts on a step is later is
    # the store's to say: the newest reviewed_at, a tie broken by verdict id).
    latest: dict[tuple[str, int], str] = {}
    for run, step, verdict in history.sort_values(["reviewed_at", "verdict_id"])[["run_id", "step_idx", "verdict"]].itertuples(
            index=False):
        latest[(run, int(step))] = verdict
    unsure = sum(v == "unsure" for v in latest.values())
    kim.locator('[data-testid="stSidebar"]').get_by_text("reviewed", exact=True).click()  # the Labels radio
    kim.wait_for_url("**labels=reviewed**", timeout=60_000)
    badge = kim.locator(".st-key-page-badge")
    kim.wait_for_function("() => (document.querySelector('.st-key-page-badge')?.innerText || '')"
                          ".replaceAll('\u2060', '').includes('Labels: reviewed')", timeout=60_000, polling=100)
    text = badge.inner_text().replace("\u2060", "")
    assert f"Labels: reviewed ({len(latest)} steps reviewed, " in text, text
    assert (f"{unsure} unsure kept as released" in text) == (unsure > 0), text


def test_the_step_and_the_verdict_buttons_share_the_first_screen(server, browser):
    """A reviewer reads the step and decides without scrolling: at 1400x1000 the step's input and
    output, the three verdict buttons and Previous and Skip (their keys on them, no label cut)
    are within the first 1000 px."""
    outside: list[str] = []
    page = new_page(browser, outside, width=1400, height=1000)
    page.goto(f"{server}/review?queue=random&seed=0&reviewer=kim")
    wait_idle(page, "Step 1 of 14")
    for name, key in (("Anomaly", "A"), ("Normal", "N"), ("Unsure", "U"), ("Previous", "←"), ("Skip", "→")):
        button = page.get_by_role("button", name=name)
        box = button.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 1000, (name, box)
        # The label whole, its key shown once (Streamlit's own shortcut hint), nothing cut.
        assert button.inner_text().split() == [name, key], button.inner_text()
        assert button.evaluate("b => [...b.querySelectorAll('*')].every(e => e.scrollWidth <= e.clientWidth + 1)"), name
    for label in ("Input", "Output"):
        box = page.get_by_text(label, exact=True).first.bounding_box()
        assert box is not None and box["y"] < 1000, (label, box)
    assert page.get_by_text("About this page", exact=False).first.bounding_box()["y"] < 400  # folded, above
    assert exceptions_on(page) == [] and not outside
