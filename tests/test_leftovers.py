"""What interrupted work leaves behind is removed by the next write or start.

A derived build killed with SIGKILL, derived builds of versions nobody reads any more, and a
local Dask cluster's scratch folder. Where a kill is practical it is real (a process blocked
inside the build, or holding a cluster, then SIGKILL); the held/free distinction the cleanup
rests on is checked with leases taken here.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import queries
from auditatlas import leases, store
from conftest import REPO
from queries import derived


def _write(root: Path, n: int) -> None:
    store.write_source(root, "alpha", {
        "runs": [{"run_id": "a:1", "corpus": "a", "outcome": "failure", "n_steps": n}],
        "steps": [{"run_id": "a:1", "corpus": "a", "step_idx": i, "action": "A", "label": i % 2} for i in range(n)],
    })


def _builds(root: Path) -> list[Path]:
    return sorted(p for p in (root / "derived").iterdir() if not p.name.startswith("."))


def _scratch(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "derived").iterdir() if p.name.startswith(".tmp-"))


# A derived build that blocks once its scratch folder is made and leased: killed there, it
# leaves what a build killed at any later moment leaves (the scratch; the rename is atomic).
BLOCKED_BUILD = """
import sys, time
from pathlib import Path
from auditatlas.duck import connect
from queries import derived
home = Path(sys.argv[1]) / "derived"
home.mkdir(parents=True, exist_ok=True)
def sql(name):
    print("building", flush=True)
    time.sleep(600)
derived.build(connect(), home / "k-blocked", sql)
"""


def _kill_a_derived_build(root: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED_BUILD, str(root)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == "building"
    # Alive, its scratch is leased: no cleanup touches it.
    assert _scratch(root) and store.recover(root) == [] and _scratch(root)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert _scratch(root), "the killed build left no scratch: the test would prove nothing"


def test_the_next_write_removes_a_killed_derived_build(tmp_path):
    root = tmp_path / "store"
    _write(root, 2)
    _kill_a_derived_build(root)
    messages: list[str] = []
    store.write_source(root, "beta", {"runs": []}, notify=messages.append)
    assert _scratch(root) == []
    assert messages and "derived/.tmp-" in messages[0]


def test_the_next_start_of_the_query_layer_removes_a_killed_derived_build(tmp_path):
    root = tmp_path / "store"
    _write(root, 2)
    _kill_a_derived_build(root)
    queries.database.Database(root.resolve())  # what an app start (or any CLI reader) makes first
    assert _scratch(root) == []


def test_stale_builds_are_removed_and_the_folder_stays_bounded(tmp_path):
    root = tmp_path / "store"
    for n in range(2, 10):  # eight versions, each warmed the way the CLI warms after a write
        _write(root, n)
        assert queries.warm(root)
    builds = _builds(root)
    # The current one and at most FRESH_KEEP recent others (nothing else holds them).
    assert len(builds) <= 1 + derived.FRESH_KEEP
    assert queries.database.for_store(root).derived in builds


def test_a_build_a_reader_holds_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(derived, "FRESH_KEEP", 0)
    root = tmp_path / "store"
    _write(root, 2)
    assert queries.warm(root)
    held = queries.database.for_store(root).derived
    lease = derived.hold(held)  # a reader of another process, still on that version
    try:
        for n in range(3, 6):
            _write(root, n)
            assert queries.warm(root)
        assert held.is_dir() and derived.is_readable(held)
        assert len(_builds(root)) == 2  # the held one and the current one
    finally:
        lease.release()
    _write(root, 7)
    assert queries.warm(root)
    assert not held.exists() and len(_builds(root)) == 1


def test_a_build_without_a_lease_is_removed_once_its_grace_is_over(tmp_path, monkeypatch):
    """Builds made before leases existed: removed by age, like before."""
    root = tmp_path / "store"
    _write(root, 2)
    old = root / "derived" / "0123456789abcdef0123"
    old.mkdir(parents=True)
    past = time.time() - 2 * max(leases.UNLEASED_GRACE_S, derived.STALE_AFTER_S)
    os.utime(old, (past, past))
    assert queries.warm(root)
    assert not old.exists()


# ---------------------------------------------------------------------------------- Dask scratch

HOLD_A_CLUSTER = """
import time
from auditatlas.cluster import get_client
client = get_client(n_workers=1)
print("up", flush=True)
time.sleep(600)
"""


def _dask_scratch(home: Path) -> list[Path]:
    from auditatlas.cluster import SCRATCH_PREFIX

    return sorted(home.glob(f"{SCRATCH_PREFIX}*"))


def test_a_local_cluster_removes_its_scratch_when_it_closes(tmp_path, monkeypatch):
    from auditatlas import cluster

    monkeypatch.setattr(cluster, "scratch_home", lambda: tmp_path)
    client = cluster.get_client(n_workers=1)
    try:
        made = _dask_scratch(tmp_path)
        assert len(made) == 1 and (made[0] / "dask-scratch-space").is_dir()  # the workers' space is in it
    finally:
        client.close()
    assert _dask_scratch(tmp_path) == []


def test_a_killed_clusters_scratch_is_removed_at_the_next_start(tmp_path, monkeypatch):
    from auditatlas import cluster

    # The killed process's system temp folder is this test's own (TMPDIR), and so is the sweep's.
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD_A_CLUSTER], cwd=REPO, text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert len(_dask_scratch(tmp_path)) == 1
        monkeypatch.setattr(cluster, "scratch_home", lambda: tmp_path)
        assert cluster.sweep_scratch() == []  # alive: left alone
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the process and its workers, as kill -9 of a session would
        proc.wait(30)
    left = _dask_scratch(tmp_path)
    assert len(left) == 1, "the kill left no scratch: the test would prove nothing"
    deadline = time.time() + 30  # the workers' own locks go as the kernel reaps them
    while cluster.sweep_scratch() != [left[0].name] and time.time() < deadline:
        time.sleep(0.5)
    assert _dask_scratch(tmp_path) == []


@pytest.mark.parametrize("held", [True, False])
def test_leases_tell_a_live_owner_from_a_dead_one(tmp_path, held):
    folder = tmp_path / "scratch"
    folder.mkdir()
    lease = leases.hold(folder)
    if not held:
        lease.release()
    assert leases.is_free(folder) is (not held)
    assert leases.remove_if_free(folder) is (not held)
    assert folder.exists() is held
    if held:
        lease.release()
