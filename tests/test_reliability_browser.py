"""A reader in a real browser while the source it reads is re-ingested again and again.

Before retirement, the old folder was deleted under queries still reading it and about one
page load in thirty showed a DuckDB traceback.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from browser_support import REPO, exceptions_on, new_page, streamlit_server, wait_idle
from conftest import WHOWHEN

pytestmark = pytest.mark.browser

REINGEST = """
import sys
from auditatlas.ingest import ingest
for _ in range(int(sys.argv[3])):
    ingest(sys.argv[1], sys.argv[2], sys.argv[4])
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A private copy of the session's 300-room demo store (the writer replaces its source; the
    build itself is shared with the other modules that read that recipe)."""
    from stores import copy_of

    return copy_of("demo-300-s0", tmp_path_factory.mktemp("reader") / "store")


def test_pages_stay_whole_while_a_source_is_replaced(store, tmp_path, browser):
    from auditatlas import simulator

    folder = tmp_path / "rooms"
    simulator.simulate(folder, rooms=200, seed=9)
    # Three replacements: the page loads meet retired folders at each; more only repeat the race
    # (tests/test_query_versions.py runs it a thousand queries deep, without a browser).
    writer = subprocess.Popen([sys.executable, "-c", REINGEST, "maadbench", str(folder), "3", str(store)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    outside: list[str] = []
    loads = 0
    with streamlit_server(store) as url:
        page = new_page(browser, outside)
        while writer.poll() is None or loads < 4:
            page.goto(url + "/")
            wait_idle(page, "Action success rate per backbone")
            assert exceptions_on(page) == []
            assert page.get_by_text("cannot be read", exact=False).count() == 0
            loads += 1
            if loads > 40:
                break
    assert writer.wait(120) == 0, writer.stderr.read().decode()
    assert loads >= 4
    assert not outside
