"""``python -m components.serve [STREAMLIT FLAGS]``: the app's server (what `make run` and the browser tests
start), warmed while it waits for its first visitor.

Streamlit runs a page's script only when a browser connects, so a new server's first visitor
paid for every import the pages need (pandas, pyarrow, plotly, the app's modules: measured 3-4
of the 6 s of a cold /boards run here) and for opening the store's query layer. This launcher
imports them first, then hands over to Streamlit's own command line (``streamlit run app.py
FLAGS``, the entry point the ``streamlit`` command calls), while a thread opens the store.

The imports run before the server starts, in its one thread, never beside it: two threads
importing pandas and plotly at once handed Streamlit a partially initialised pandas (the
server died at start in 5 of the suite's browser modules). Opening the store imports nothing
new (``queries`` and its modules are imported first), so it can run beside the server.

What the warm-up cannot do: fill ``st.cache_data`` (it belongs to a running script), build a
store (the first launch does that, with its progress), or compute what a page computes for a
slice; the default views of the boards, label doubt, the patterns and the Detectors grid are
kept in the store for that (``queries.kept``), and the warm-up keeps them when nothing is kept
for this code.
"""
from __future__ import annotations

import importlib
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_log = logging.getLogger("auditatlas.serve")

# What every page imports or draws with; then the pages' views and the app's own modules
# (auditatlas/views/*, components/*).
LIBRARIES = ("streamlit.web.cli", "pandas", "pyarrow", "pyarrow.parquet", "duckdb", "numpy", "plotly.graph_objects",
             "plotly.express", "pandas.io.formats.style", "queries", "queries.views", "queries.derived",
             "auditatlas.views.pages", "auditatlas.analyses.board_kept",
             # A run's graph (the Explorer and its links): 0.3-0.6 s of its first open.
             "networkx", "pyvis.network")


def import_pages_modules() -> None:
    """Import what the pages need; never raises (an import that fails here fails again on the
    page, which says so). Streamlit says "No runtime found" once per cached function a module
    declares before the server runs: true and harmless here (the caches are the same memory
    caches either way), so a normal start prints no warning."""
    importlib.import_module("streamlit.runtime.caching.cache_data_api")  # its logger, as Streamlit sets it up
    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = cache_log.level
    cache_log.setLevel(logging.ERROR)
    try:
        for name in LIBRARIES:
            importlib.import_module(name)
        # The pages' views too (each page imports its own on first run: the Explorer's 0.2-0.5 s).
        for package in ("auditatlas.views", "components"):
            for path in sorted((REPO / package.replace(".", "/")).glob("*.py")):
                if not path.stem.startswith("__") and path.stem != "serve":
                    importlib.import_module(f"{package}.{path.stem}")
    except Exception as exc:  # noqa: BLE001 - the server must start whatever the warm-up meets
        _log.warning("warm-up import stopped early (%s); the first visitor does the rest", exc)
    finally:
        cache_log.setLevel(level)


def open_store() -> None:
    """In a thread beside the server: never raises (the first page reports a broken store)."""
    warm = None
    try:
        warm = _warm_if_stale()
    except Exception as exc:  # noqa: BLE001 - the pages compute what is not kept on first open
        _log.warning("warm-up could not start `auditatlas warm` (%s); pages compute what is missing on first open", exc)
    try:
        _open_store()
    except Exception as exc:  # noqa: BLE001
        _log.warning("warm-up could not open the store (%s); the first visitor does it", exc)
    try:
        _first_element_check()
    except Exception as exc:  # noqa: BLE001 - a missed warm-up only costs the first visitor 0.1 s
        _log.warning("warm-up skipped Streamlit's first-element check (%s)", exc)
    if warm is not None and warm.wait() != 0:  # waited for here, so it leaves no zombie behind
        _log.warning("`auditatlas warm` exited with %s (its notes above); pages compute what is missing on first "
                     "open", warm.returncode)


def _first_element_check(timeout_s: float = 60) -> None:
    """Streamlit's once-per-process check on the first element drawn ("is this a REPL?") reads
    the source of every frame on the stack: 0.12 s from a page's deep script thread here, paid
    by the first visitor. Done once the runtime exists (before, the check warns that the script
    was not started by ``streamlit run``), from this thread's shallow stack."""
    from streamlit import delta_generator
    from streamlit.runtime import Runtime

    deadline = time.monotonic() + timeout_s
    while not Runtime.exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    delta_generator._maybe_print_use_warning()


def _open_store() -> None:
    """Check the store as every page does first (each part's footer read, once per store
    version and process), bind its current version (its views, DuckDB's catalog) and read its
    sidebar choices once, so the first page's queries find the connection open and the files
    cached."""
    import queries
    from auditatlas.store import is_empty
    from components import cached

    root = cached.store_root()
    if root.is_dir() and not is_empty(root) and not cached.store_problems():
        queries.run("slice_options", root=root)


def _warm_if_stale() -> subprocess.Popen | None:
    """Start ``auditatlas warm`` (niced, in a process of its own) when nothing is kept for the
    store's version with this code, and return it: kept views are keyed by the code, so after an
    upgrade the first open of /boards, /review, /patterns and /detectors would otherwise each
    compute theirs (4 s, 1 s and more on the default store; 38 s and 15 s for the first two at
    100,000 rooms). A process,
    not a thread: what it imports (scikit-learn, scipy) would otherwise be imported beside the
    pages' scripts (see above). Skipped under ``AUDITATLAS_KEEP_BOARDS=0`` (the test suite)."""
    from auditatlas.analyses.board_kept import keeps_after_write
    from auditatlas.store import is_empty, store_dir
    from queries.kept import home, version_key

    root = Path(store_dir()).resolve()
    if not keeps_after_write() or not root.is_dir() or is_empty(root):
        return None
    key = version_key(root)
    if key is None or (home(root) / key).is_dir():
        return None
    print("  Building the boards, label doubt and step vectors of this store version in the background "
          "(`auditatlas warm`), so no page computes them on first open.", flush=True)
    return subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(root), "warm"], cwd=REPO,
                            preexec_fn=lambda: os.nice(10), stdin=subprocess.DEVNULL)


class NotStarted(RuntimeError):
    """The server exited or did not answer; the message ends with what it printed."""


@contextmanager
def running(store: Path | None, script: Path | None = None, timeout_s: float = 90,
            repo: Path = REPO) -> Iterator[str]:
    """A server in a process of its own on a free local port, its URL yielded once it answers,
    stopped on exit: the app through this launcher on ``store``, or ``script`` by plain
    ``streamlit run`` (a reference page). For the browser tests and bench/pages.py, which
    serves another checkout's app with ``repo`` (its modules come first on the path) to time
    before against after in one run."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, **({"AUDITATLAS_STORE": str(store)} if store is not None else {})}
    command = ["-m", "components.serve"] if script is None else ["-m", "streamlit", "run", str(script)]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, *command, "--server.port", str(port), "--server.headless", "true",
                             "--server.address", "127.0.0.1"], cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(proc, url, timeout_s, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _wait_for(proc: subprocess.Popen, url: str, timeout_s: float, log) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    proc.kill()
    proc.wait()
    log.seek(0)
    said = log.read().decode(errors="replace")[-2000:]
    raise NotStarted(f"the server at {url} {'exited' if proc.returncode not in (None, -9) else 'did not answer'}: {said}")


def main(argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(REPO))
    os.chdir(REPO)
    import_pages_modules()
    threading.Thread(target=open_store, name="auditatlas-open-store", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(REPO / "app.py"), *(sys.argv[1:] if argv is None else argv)]
    cli.main()


if __name__ == "__main__":
    main()
