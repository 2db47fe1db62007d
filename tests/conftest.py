"""Shared fixtures: the stores every module reads (built once per session, tests/stores.py), one
app server for every browser test on the app store (its tests run on one worker), one browser
per worker, and the xdist grouping that keeps a large build's module, or a browser module, on
one worker."""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stores import APP_ROOMS, REPO, SHARED_DATA, TAUBENCH, WHOWHEN, copy_of, shared_store  # noqa: F401 (re-exported)

STORES_ENV = "AUDITATLAS_TEST_STORES"


def _scan_installed_components_once() -> None:
    """Keep the answer of Streamlit's scan of installed packages for components.

    Every new AppTest reads the metadata of every installed distribution (about 500 here) to find
    Streamlit component manifests: 0.15 CPU-s each time, and the suite makes a few hundred
    AppTests. The installed packages do not change during a session, so the first answer
    stands for the rest (the app itself, under ``streamlit run``, scans once per server).
    """
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=None)(scan)


_scan_installed_components_once()


# The suite's many small writes (CLI ingests, first launches) would each score every board
# (the LIVE board alone fits 300 models, ~2 s at any size): they leave that to the first open,
# as AUDITATLAS_KEEP_BOARDS=0 says. tests/test_board_kept.py turns it on where it is the subject.
os.environ["AUDITATLAS_KEEP_BOARDS"] = "0"


def pytest_configure(config) -> None:
    # The controller (or a plain run) picks the folder the session's stores live in; xdist
    # workers inherit it through the environment, so every worker reads the same builds.
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        kept = os.environ.get(STORES_ENV)
        if kept:  # the developer's own folder, kept between runs (a quick loop); never removed here
            Path(kept).mkdir(parents=True, exist_ok=True)
            shutil.rmtree(Path(kept) / "unnamed-store", ignore_errors=True)  # no test may find another run's
            config._auditatlas_stores = None
        else:
            config._auditatlas_stores = tempfile.mkdtemp(prefix="auditatlas-test-stores-")
            os.environ[STORES_ENV] = config._auditatlas_stores
        # A test that reaches the app or the CLI without naming a store gets a scratch one, never
        # the checkout's data/store (a CI run once left a full default store there).
        os.environ["AUDITATLAS_STORE"] = os.path.join(os.environ[STORES_ENV], "unnamed-store")


def pytest_unconfigure(config) -> None:
    builder = getattr(config, "_auditatlas_builder", None)
    if builder is not None and builder.poll() is None:  # a run stopped early (-x, ^C)
        builder.kill()
        builder.wait()
    folder = getattr(config, "_auditatlas_stores", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


# Modules whose module-scoped fixture is a large build (5,200 and 1,500 simulated rooms): their
# tests run on one worker, so it is built once. Every other module's tests spread over the
# workers one by one (grouping every module by file ran 12.5 min against 10.8 here: worse balance).
ONE_WORKER_MODULES = frozenset({"test_simulator_calibration", "test_demo"})

# The shared stores a test reaches through these fixtures are built in the background from the
# start of the session (see _build_ahead), and the tests that need them are queued after the ones
# that do not, so no worker sits idle while the app store (half a minute of CPU) is built.
BUILT_AHEAD = {"app_store": "app", "detectors_store": "detectors"}


def _needs(item) -> list[str]:
    return [recipe for fixture, recipe in BUILT_AHEAD.items() if fixture in item.fixturenames]


def _queue_rank(item) -> int:
    """Where a test goes in the queue xdist hands out (``--no-loadscope-reorder`` keeps it):
    the large one-worker builds first, then the browser modules (long units go early: the
    app server's group alone is a minute and a half), those on their own stores before those
    on the stores built ahead, which are built meanwhile; then the other tests, many and short,
    which even out the end."""
    browser = item.get_closest_marker("browser") is not None
    if item.module.__name__ in ONE_WORKER_MODULES:
        return 0
    if browser:
        return 2 if _needs(item) else 1
    return 4 if _needs(item) else 3


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the markers into the node ids
def pytest_collection_modifyitems(config, items) -> None:
    """Which tests run on one worker (``--dist loadgroup``): a browser module's tests (they share
    its page visits and, for some, its own Streamlit server) and the modules above; every test
    on the session's app server runs on one worker, so one server serves them all. Then the
    queue order (``_queue_rank``), and the build of the stores ahead."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        module = item.module.__name__
        if "local_cluster" in item.fixturenames:
            # One local Dask cluster for the tests that only need one: each start spawned two
            # worker processes that import the whole stack (~7 CPU-s).
            item.add_marker(pytest.mark.xdist_group("local_cluster"))
        elif "app_server" in item.fixturenames:
            # One app server for the session, not one per worker: a second server repeated the
            # first one's start and every cold page computation (~10 CPU-s).
            item.add_marker(pytest.mark.xdist_group("app_server"))
        elif item.get_closest_marker("browser") is not None or module in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(module))
    items.sort(key=_queue_rank)  # stable: collection order within a rank
    _build_ahead(config, items)


def _build_ahead(config, items) -> None:
    """Start one background process that builds the stores the collected tests will ask for
    (tests/stores.py's lock makes an asker wait for it, or build itself if the process failed).
    One process per session: the first worker, or a plain run, starts it."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return
    recipes = list(dict.fromkeys(r for item in items for r in _needs(item)))
    if not recipes:
        return
    log = open(Path(os.environ[STORES_ENV]) / "build-ahead.log", "w")
    code = "import sys; from stores import shared_store\nfor name in sys.argv[1:]: shared_store(name)"
    config._auditatlas_builder = subprocess.Popen(
        [sys.executable, "-c", code, *recipes], cwd=Path(__file__).parent, stdout=log, stderr=log,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))})
    log.close()


@pytest.fixture(scope="session")
def app_store() -> Path:
    """A store like the one `make run` builds, with the real corpora added when present.
    Shared: a test that writes takes ``copy_of("app", tmp_path / "store")``."""
    return shared_store("app")


@pytest.fixture(scope="session")
def detectors_store(app_store) -> Path:
    """The app store without its panel, plus three known prediction sets (tests/stores.py)."""
    return shared_store("detectors")


@pytest.fixture(scope="session")
def app_server(app_store) -> Iterator[str]:
    """One Streamlit server on the app store for every browser module that uses it (they run on
    one worker: see pytest_collection_modifyitems)."""
    from browser_support import streamlit_server

    with streamlit_server(app_store) as url:
        yield url


# The local cluster the tests share while they run, as (its ExitStack, its client); closed
# after the last of them.
_cluster: list[tuple] = []


@pytest.fixture
def local_cluster():
    """A client on one local Dask cluster of two worker processes (``auditatlas.cluster``), for
    every test that runs jobs on one; its tests run on one worker, one after another. The
    cluster is started by the first of them and closed after the last
    (``pytest_runtest_teardown``): even idle, its scheduler and workers keep using CPU, and the
    suite keeps both cores busy. A test of how a cluster starts (tests/test_cluster.py) makes its own."""
    from auditatlas.cluster import client_session

    if not _cluster:
        stack = contextlib.ExitStack()
        _cluster.append((stack, stack.enter_context(client_session(None, n_workers=2))))
    return _cluster[0][1]


def _close_cluster() -> None:
    while _cluster:
        _cluster.pop()[0].close()


def pytest_runtest_teardown(item, nextitem) -> None:
    if "local_cluster" in item.fixturenames and (nextitem is None or "local_cluster" not in nextitem.fixturenames):
        _close_cluster()


def pytest_sessionfinish(session) -> None:
    _close_cluster()  # a run stopped before the last test that needed it


@pytest.fixture(scope="session")
def browser() -> Iterator:
    """One headless Debian chromium profile per worker (each test opens its own pages)."""
    from browser_support import chromium

    with chromium() as b:
        yield b


@pytest.fixture(autouse=True)
def _close_browser_pages(request) -> Iterator[None]:
    """Close every page a browser test left open: a page left behind keeps its Streamlit
    session and its charts' work going in Chromium through the tests after it."""
    yield
    if "browser" in request.fixturenames:
        for page in list(request.getfixturevalue("browser").pages):
            page.close()
