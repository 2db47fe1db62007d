"""Shared fixtures: a small default store (simulated corpus + CatchBench release, plus the real
corpora from ../shared/data when present) that the app, page and browser tests all use."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
WHOWHEN = SHARED_DATA / "whowhen" / "Algorithm-Generated"
TAUBENCH = SHARED_DATA / "tau-bench" / "gpt-4o-airline.trials01.json"
APP_ROOMS = 1500  # the size `make run` builds (about 5 s)


@pytest.fixture(scope="session")
def app_store(tmp_path_factory) -> Path:
    """A store like the one `make run` builds, smaller, with the real corpora added when present."""
    from auditatlas.ingest import ingest
    from auditatlas.ingest.demo import build_default_store

    root = tmp_path_factory.mktemp("app-store")
    build_default_store(root, rooms=APP_ROOMS, seed=0)
    if WHOWHEN.exists():
        ingest("whowhen", WHOWHEN, root)
    if TAUBENCH.exists():
        ingest("taubench", TAUBENCH, root)
    return root
