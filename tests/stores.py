"""The stores the tests read, each built once per test session and shared by every xdist worker.

Building a store is most of what the suite used to spend its time on: the app store alone (a
default store like the one ``make run`` builds, smaller: simulated rooms, the CatchBench
release, the standard panel of 11 detectors x 2 seeds and the real corpora from ../shared/data)
takes a quarter of a minute, and it was
built again in several modules. Here each named recipe is built at most once per session: the
first worker that asks builds it under a file lock, into a scratch folder renamed into place,
and every other asker waits for it and reads the same folder.

A test that writes into a store asks for :func:`copy_of` (a private copy under its own
``tmp_path``), never the shared folder itself.

Readers may still write the store's ``derived/`` cache: that is safe to share (each build goes
to a scratch folder renamed into place, see queries/derived.py).
"""
from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
WHOWHEN = SHARED_DATA / "whowhen" / "Algorithm-Generated"
TAUBENCH = SHARED_DATA / "tau-bench" / "gpt-4o-airline.trials01.json"
# Rooms: `make run` builds 1,500. At 600 every view the tests open is there (each propagation
# cell, AUROC cell, chain and search hit they read), and everything over the store (its build, its
# kept views, each page a test draws) costs less: the suite spent about 37 CPU-seconds fewer.
APP_ROOMS = 600
# Panel seeds: `make run` scores 5. Two keep every view the tests read (a detector's seeds grouped
# into one entrant with its spread) at 22 sets instead of 55: the panel was 21 of the store's 26
# CPU-seconds, and every board and grid over it is computed again on a first open.
APP_SEEDS = 2
BUILT = ".built"  # written last: a folder without it is a build that did not finish


def _app(root: Path) -> None:
    """A store like the one `make run` builds, with the real corpora added when present."""
    from auditatlas.ingest import ingest
    from auditatlas.ingest.demo import build_default_store

    build_default_store(root, rooms=APP_ROOMS, seed=0, seeds=APP_SEEDS)
    if WHOWHEN.exists():
        ingest("whowhen", WHOWHEN, root)
    if TAUBENCH.exists():
        ingest("taubench", TAUBENCH, root)
    _keep(root)


def _keep(root: Path) -> None:
    """The views a write keeps for its version, kept once here as `make run`'s build keeps them
    (the suite sets AUDITATLAS_KEEP_BOARDS=0 for its many small writes): every server, export
    and page test over this store, or a copy of it, then reads them instead of scoring the boards
    again in each process. Scoring on a first open has tests of its own (test_board_kept.py)."""
    from functools import partial

    from auditatlas.kept_views import keep_for_version
    from queries.kept import remember, remember_frame, remembering_runner

    keep_for_version(root, remembering_runner(root), partial(remember, root), partial(remember_frame, root))


def _detectors(root: Path) -> None:
    """The app store without its standard panel, plus three known prediction sets (the Detectors
    page and browser tests read exactly these)."""
    from test_detectors_app import SET_IDS, without_panel, write_sets

    shutil.rmtree(root)
    shutil.copytree(shared_store("app"), root, ignore=shutil.ignore_patterns(BUILT, "derived"))
    without_panel(root)
    assert write_sets(root) == SET_IDS


def _demo(rooms: int, seed: int) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        from auditatlas.ingest.demo import build_demo

        build_demo(root, rooms=rooms, seed=seed)
    return build


def _rooms(rooms: int, seed: int) -> Callable[[Path], None]:
    """Simulated rooms as release files (no store): the ingests under test read them."""
    def build(root: Path) -> None:
        from auditatlas.simulator import simulate

        simulate(root, rooms=rooms, seed=seed)
    return build


def _rescore_app(root: Path) -> None:
    """200 simulated rooms plus the authored toy corpus (whose backbone C has no anomaly)."""
    from auditatlas.ingest.demo import build_demo
    from auditatlas.store import write_source
    from test_detectors_engine import _toy_tables

    build_demo(root, rooms=200, seed=1)
    write_source(root, "toy", _toy_tables())


def _views_small(root: Path) -> None:
    """A 40-room default store without the panel, plus the Detectors page's three known sets."""
    from auditatlas.ingest.demo import build_default_store
    from test_detectors_app import write_sets

    build_default_store(root, rooms=40, seed=0, panel=False)
    write_sets(root)


def _released(root: Path) -> None:
    """CatchBench's release (the PRE board, 110 published cells) and Who&When (POST localization)."""
    from auditatlas.ingest import ingest

    ingest("catchbench", None, root)
    ingest("whowhen", WHOWHEN, root)


def _released_by_the_cli(root: Path) -> None:
    """CatchBench, Who&When and tau-bench ingested by the command line, one write each (each
    write builds its version's derived tables, as a user's would)."""
    from cli_support import run_cli

    for args in (("ingest", "catchbench"), ("ingest", "whowhen", str(WHOWHEN)), ("ingest", "taubench", str(TAUBENCH))):
        done = run_cli("--store", str(root), *args, cwd=REPO)
        assert done.returncode == 0, done.stderr


RECIPES: dict[str, Callable[[Path], None]] = {
    "rescore-app": _rescore_app,
    "views-small": _views_small,
    "released": _released,
    "released-by-the-cli": _released_by_the_cli,
    "app": _app,
    "detectors": _detectors,
    "demo-300-s0": _demo(300, 0),
    "rooms-400-s5": _rooms(400, 5),
    "rooms-600-s3": _rooms(600, 3),
}


def _home() -> Path:
    """The folder every worker of this session shares (pytest's base temp, or its parent
    under xdist, where each worker has a base temp of its own)."""
    base = Path(os.environ["AUDITATLAS_TEST_STORES"])
    base.mkdir(parents=True, exist_ok=True)
    return base


def shared_store(name: str) -> Path:
    """The store of recipe ``name``, built now if no worker of this session has built it yet."""
    home = _home()
    root = home / name
    with open(home / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (root / BUILT).exists():
            scratch = home / f".{name}.building"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            RECIPES[name](scratch)
            (scratch / BUILT).touch()
            shutil.rmtree(root, ignore_errors=True)
            os.replace(scratch, root)
    return root


def copy_of(name: str, dest: Path) -> Path:
    """A private copy of recipe ``name`` at ``dest`` (a test that writes owns it)."""
    shutil.copytree(shared_store(name), dest, ignore=shutil.ignore_patterns(BUILT))
    return dest
