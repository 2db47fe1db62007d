"""Shared fixtures: the stores every module reads (built once per session, tests/stores.py), one
app server and one browser for every browser test on the app store, and the xdist grouping that
keeps tests sharing a server on one worker."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from stores import APP_ROOMS, REPO, SHARED_DATA, TAUBENCH, WHOWHEN, copy_of, shared_store  # noqa: F401 (re-exported)

STORES_ENV = "AUDITATLAS_TEST_STORES"


def pytest_configure(config) -> None:
    # The controller (or a plain run) picks the folder the session's stores live in; xdist
    # workers inherit it through the environment, so every worker reads the same builds.
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        config._auditatlas_stores = tempfile.mkdtemp(prefix="auditatlas-test-stores-")
        os.environ[STORES_ENV] = config._auditatlas_stores


def pytest_unconfigure(config) -> None:
    folder = getattr(config, "_auditatlas_stores", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items) -> None:
    """Which tests run on one worker (``--dist loadgroup``): every test of a module together, so
    a module-scoped fixture (a simulated store, a server) is built once, not once per worker;
    and every test on the app store's server together, whatever its module."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        uses_app_server = "app_server" in getattr(item, "fixturenames", ())
        group = "app-server" if uses_app_server else item.module.__name__
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def app_store() -> Path:
    """A store like the one `make run` builds, with the real corpora added when present.
    Shared: a test that writes takes ``copy_of("app", tmp_path / "store")``."""
    return shared_store("app")


@pytest.fixture(scope="session")
def app_server(app_store) -> Iterator[str]:
    """One Streamlit server on the app store for every browser module of the session."""
    from browser_support import streamlit_server

    with streamlit_server(app_store) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator:
    """One headless Debian chromium per worker (each test opens its own page)."""
    from browser_support import chromium

    with chromium() as b:
        yield b
