"""The store under concurrent writers, crashes and broken folders (issue: Reliability).

Real processes race real writes; a real ingest is killed with SIGKILL; broken stores are made
by hand. Each test would fail on the store before the lock, retirement and recovery existed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import queries
from auditatlas import store
from auditatlas.errors import StoreBusy, StoreError
from conftest import REPO

# A writer process: it imports the store once, then for each line "ROOT SOURCE N" on stdin
# writes that source and answers "ok" (or the error). Two of them are given the same trial's
# line at the same moment, so each trial is a race between two processes already past their
# imports: a tighter race than two interpreters starting (and 2 interpreter starts per test
# instead of one pair per trial).
WRITER = """
import sys
from auditatlas.store import write_source
print("ready", flush=True)
for line in sys.stdin:
    root, source, n = line.split()
    n = int(n)
    run = f"{source}:r"
    try:
        write_source(root, source, {
            "runs": [{"run_id": run, "corpus": source, "outcome": "failure", "n_steps": n}],
            "steps": [{"run_id": run, "corpus": source, "step_idx": i, "action": "A", "label": 0} for i in range(n)],
        })
    except Exception as exc:
        print("error", repr(exc), flush=True)
    else:
        print("ok", flush=True)
"""


class _Writers:
    """Two writer processes; ``race`` hands each its write at once and waits for both."""

    def __init__(self) -> None:
        self.procs = [subprocess.Popen([sys.executable, "-c", WRITER], cwd=REPO, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                      for _ in range(2)]
        for proc in self.procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()

    def race(self, *writes: tuple[Path, str, int]) -> None:
        for proc, (root, source, n) in zip(self.procs, writes):
            proc.stdin.write(f"{root} {source} {n}\n")
        for proc in self.procs:
            proc.stdin.flush()
        answers = [proc.stdout.readline().strip() for proc in self.procs]
        assert answers == ["ok", "ok"], answers

    def close(self) -> None:
        for proc in self.procs:
            proc.stdin.close()
            proc.wait(60)


@pytest.fixture
def writers():
    pair = _Writers()
    try:
        yield pair
    finally:
        pair.close()


def _steps_per_source(root: Path) -> dict[str, int]:
    manifest = store.read_manifest(root)
    return {name: entry["rows"]["steps"] for name, entry in manifest["sources"].items()}


def test_two_writers_of_different_sources_both_land(tmp_path, writers):
    """Before the lock, one of two racing sources vanished in about a quarter of the trials."""
    for trial in range(10):
        root = tmp_path / f"s{trial}"
        writers.race((root, "alpha", 2), (root, "beta", 3))
        assert _steps_per_source(root) == {"alpha": 2, "beta": 3}, f"trial {trial} lost a source"


def test_two_writers_of_one_source_the_later_wins_whole(tmp_path, writers):
    root = tmp_path / "s"
    for _ in range(5):
        writers.race((root, "alpha", 2), (root, "alpha", 7))
        rows = _steps_per_source(root)["alpha"]
        assert rows in (2, 7)
        con = queries.connect(root)
        assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == rows  # never a mix


def test_a_second_writer_waits_or_fails_naming_the_holder(tmp_path):
    messages = []
    with store.store_lock(tmp_path):
        holder = (tmp_path / store.LOCK_HOLDER).read_text()
        assert str(os.getpid()) in holder
        # Another process asking not to wait fails at once with the holder in the sentence.
        out = subprocess.run([sys.executable, "-m", "auditatlas.cli", "--store", str(tmp_path), "ingest",
                              "whowhen", str(REPO / "tests" / "fixtures" / "whowhen"), "--no-wait"],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
        assert out.returncode == 1
        assert f"process {os.getpid()}" in out.stderr and "Traceback" not in out.stderr
    # Within one process the lock is re-entrant (the first-launch build nests writes in it).
    with store.store_lock(tmp_path, notify=messages.append):
        store.write_source(tmp_path, "alpha", {"runs": [], "steps": []})
    assert messages == []


def test_readers_keep_a_whole_version_during_a_replace(tmp_path):
    """A replaced folder is retired, not deleted, so a reader mid-query still finds its files."""
    store.write_source(tmp_path, "alpha", {"runs": [{"run_id": "a:1", "corpus": "a", "outcome": "success", "n_steps": 0}]})
    old_files = store.table_files(tmp_path, "runs")
    store.write_source(tmp_path, "alpha", {"runs": [{"run_id": "a:2", "corpus": "a", "outcome": "success", "n_steps": 0}]})
    assert all(Path(f).exists() for f in old_files)
    assert pq.read_table(old_files[0]).column("run_id").to_pylist() == ["a:1"]
    con = queries.connect(tmp_path)
    assert con.execute("SELECT run_id FROM runs").fetchall() == [("a:2",)]


@pytest.fixture(scope="module")
def rooms_folder() -> Path:
    """600 simulated rooms as files, simulated once for the session (an ingest only reads them)."""
    from stores import shared_store

    return shared_store("rooms-600-s3")


@pytest.mark.parametrize("delay", [0.4, 1.2, 2.5, 4.0])
def test_kill_9_during_an_ingest_then_the_next_write_cleans_up(tmp_path, delay, rooms_folder):
    root = tmp_path / "store"
    store.write_source(root, "keep", {"runs": [{"run_id": "k:1", "corpus": "k", "outcome": "success", "n_steps": 0}]})
    before = _steps_per_source(root)
    proc = subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(root), "ingest", "maadbench", str(rooms_folder)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    # Whatever moment it died at, the store is readable and holds a whole version.
    assert store.health(root, deep=True) == []
    after = _steps_per_source(root)
    assert after["keep"] == before["keep"]
    assert set(after) <= {"keep", "maadbench"}
    # The next write removes every leftover and succeeds.
    messages: list[str] = []
    store.write_source(root, "other", {"runs": []}, notify=messages.append)
    leftovers = [p.name for p in root.iterdir() if p.name.startswith((".staging-", ".tmp-", ".manifest-"))]
    assert leftovers == []
    manifest = store.read_manifest(root)
    known = {Path(e["dir"]).name for e in manifest["sources"].values()} | {Path(r["dir"]).name for r in manifest["retired"]}
    assert {p.name for p in (root / "sources").iterdir()} <= known


def test_recovery_removes_and_reports_each_kind_of_leftover(tmp_path):
    store.write_source(tmp_path, "alpha", {"runs": []})
    (tmp_path / ".staging-alpha-x1").mkdir()
    (tmp_path / ".staging-alpha-x1" / "runs").mkdir()
    (tmp_path / ".manifest-abc").write_text("{}")
    (tmp_path / ".tmp-demo-y2").mkdir()
    (tmp_path / "sources" / "ghost-123").mkdir()
    messages: list[str] = []
    store.write_source(tmp_path, "beta", {"runs": []}, notify=messages.append)
    assert len(messages) == 1
    for name in (".staging-alpha-x1", ".manifest-abc", ".tmp-demo-y2", "sources/ghost-123"):
        assert name in messages[0]
        assert not (tmp_path / name).exists()


# ----------------------------------------------------------------------------- broken stores

def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditatlas.cli", "--store", str(root), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def _healthy(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    store.write_source(root, "alpha", {"runs": [{"run_id": "a:1", "corpus": "a", "outcome": "success", "n_steps": 0}]})
    return root


def test_info_on_a_broken_store_says_one_sentence_from_a_real_interpreter(tmp_path):
    """One broken kind through ``python -m``: the exit code and the one sentence as a shell sees
    them. Every kind, command and page is covered in process by tests/test_broken_stores.py."""
    root = _healthy(tmp_path)
    (root / store.MANIFEST).write_text("{not json")
    out = _cli(root, "info")
    assert "Traceback" not in out.stderr
    assert "is corrupt" in out.stderr
    assert out.returncode == 1


def test_write_into_a_file_path_is_refused(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        store.write_source(target, "alpha", {"runs": []})


def test_no_wait_raises_store_busy_inside_one_process_too(tmp_path):
    import threading

    entered, release = threading.Event(), threading.Event()

    def hold():
        with store.store_lock(tmp_path):
            entered.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    entered.wait(10)
    try:
        with pytest.raises(StoreBusy):
            store.write_source(tmp_path, "alpha", {"runs": []}, wait=False)
    finally:
        release.set()
        t.join()


FIRST_LAUNCH = """
import sys
from auditatlas.ingest import demo
built = demo.ensure_default_store(sys.argv[1])
print("built" if built else "found")
"""


def test_concurrent_first_launches_build_the_default_store_once(tmp_path, monkeypatch):
    """Two first visitors on an empty store: one builds, the other waits and finds it (a third
    visitor adds an interpreter and nothing the race does not already show)."""
    from auditatlas.ingest import demo

    root = tmp_path / "store"
    # A default store of 40 rooms and one panel seed: the race is the same, the build seconds.
    env = {**os.environ, "AUDITATLAS_DEFAULT_ROOMS": "40", "AUDITATLAS_DEFAULT_SEEDS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_LAUNCH, str(root)], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        outputs.append(out.strip().splitlines()[-1])  # DuckDB may draw a progress bar above it
    assert sorted(outputs) == ["built", "found"]
    manifest = store.read_manifest(root)
    assert manifest["retired"] == []  # nothing was built twice and replaced
    assert "demo" in manifest["sources"] and "catchbench" in manifest["sources"]
    assert demo.ensure_default_store(root) is False
