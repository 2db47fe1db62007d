"""A reader in a real browser while the source it reads is re-ingested again and again.

Before retirement, the old folder was deleted under queries still reading it and about one
page load in thirty showed a DuckDB traceback.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from auditatlas.store import read_manifest
from browser_support import REPO, exceptions_on, new_page, streamlit_server, wait_idle

pytestmark = pytest.mark.browser

# The writer replaces the source again and again until the stop file appears, so every page
# load below reads while replacements land (a fixed count finished before the second load).
REINGEST = """
import sys, time
from pathlib import Path
from auditatlas.ingest import ingest
fmt, folder, root, stop = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
n = 0
while not stop.exists():
    ingest(fmt, folder, root)
    n += 1
    time.sleep(1.0)  # a replacement a second: several land under each load
print(n)
"""
LOADS = 2


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A private copy of the session's 300-room demo store (the writer replaces its source; the
    build itself is shared with the other modules that read that recipe)."""
    from stores import copy_of

    return copy_of("demo-300-s0", tmp_path_factory.mktemp("reader") / "store")


def test_pages_stay_whole_while_a_source_is_replaced(store, tmp_path, browser):
    from auditatlas import simulator

    folder = tmp_path / "rooms"
    simulator.simulate(folder, rooms=60, seed=9)  # small: each replacement lands in a fraction of a second
    stop = tmp_path / "stop"
    versions = set()
    outside: list[str] = []
    with streamlit_server(store) as url:
        writer = subprocess.Popen([sys.executable, "-c", REINGEST, "maadbench", str(folder), str(store), str(stop)],
                                  cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            began = time.monotonic()  # the loads start once the writer has landed its first replacement
            while "maadbench" not in read_manifest(store)["sources"] and time.monotonic() < began + 60:
                time.sleep(0.1)
            page = new_page(browser, outside)
            for _ in range(LOADS):
                page.goto(url + "/")
                wait_idle(page, "Action success rate per backbone")
                assert exceptions_on(page) == []
                assert page.get_by_text("cannot be read", exact=False).count() == 0
                versions.add(read_manifest(store)["sources"]["maadbench"]["dir"])
        finally:
            stop.touch()
            out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    # The race was on: the source was replaced under the loads, more than once per load.
    assert int(out.strip().splitlines()[-1]) > LOADS and len(versions) >= 2, (out, versions)
    assert not outside
