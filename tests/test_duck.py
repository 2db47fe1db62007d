"""Every DuckDB connection of the product is opened by auditatlas.duck, with the progress bar off
(DuckDB draws it on stdout after two seconds, even into a pipe: it broke `--json` output), and
with the process's freed memory given back (jemalloc's background purge, Arrow on malloc)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from auditatlas.duck import connect
from conftest import REPO


def test_connections_have_no_progress_bar(tmp_path):
    import queries

    con = connect()
    try:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False
    finally:
        con.close()
    # The query layer's cursors (each a connection of its own) too.
    cur = queries.connect(tmp_path / "empty-store")
    assert cur.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False
    from queries.database import for_store

    db = for_store(tmp_path / "empty-store")
    with db.reading(derived=False) as version:  # the cursor named queries run on
        setting = db.cursor_on(version).execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]
    assert setting is False


def test_no_module_opens_duckdb_another_way():
    offenders = []
    for folder in ("auditatlas", "queries", "components", "pages"):
        for path in (REPO / folder).rglob("*.py"):
            if path.name == "duck.py":
                continue
            if re.search(r"\bduckdb\.connect\(", path.read_text()):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_connections_let_jemalloc_purge_in_the_background(tmp_path):
    """What DuckDB frees goes back to the system as it ages, not at the next large allocation:
    the setting is on for the product's connections and the query layer's cursors."""
    from queries.database import for_store

    con = connect()
    try:
        assert con.execute("SELECT current_setting('allocator_background_threads')").fetchone()[0] is True
    finally:
        con.close()
    db = for_store(tmp_path / "empty-store")
    with db.reading(derived=False) as version:
        setting = db.cursor_on(version).execute("SELECT current_setting('allocator_background_threads')").fetchone()[0]
    assert setting is True


# Made in a fresh interpreter (which starts on mimalloc): what moves its Arrow pool to malloc.
FRESH_PROCESSES = {
    "reading a store through the query layer": "import queries\nqueries.connect(Path(sys.argv[1]))\n",
    "a receiver": ("from auditatlas.ingest.receiver.service import Receiver\n"
                   "Receiver(Path(sys.argv[1]), 'live', say=lambda line: None)\n"),
}


@pytest.mark.parametrize("what", list(FRESH_PROCESSES))
def test_a_process_takes_arrows_buffers_from_malloc(tmp_path, what):
    """pandas keeps every string column of a result in Arrow, whose bundled mimalloc kept the
    freed buffers: label doubt at a million rooms held a 462 MB region of them, and a receiver
    writing every second ~100 MB more (bench/README.md). A fresh interpreter starts on
    mimalloc; reading a store, or a receiver, moves it to malloc."""
    code = ("import sys, pyarrow as pa; from pathlib import Path\n"
            "before = pa.default_memory_pool().backend_name\n"
            + FRESH_PROCESSES[what] +
            "print(before, pa.default_memory_pool().backend_name)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store")], capture_output=True, text=True,
                          timeout=120, cwd=REPO,
                          env={k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mimalloc", "system"]
