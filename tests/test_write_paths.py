"""Every write path under the same tests: kill -9 in the middle of a write, two writers at once,
malformed input.

The paths: ``ingest otlp``, ``ingest traces``, ``ingest labels``, ``ingest reviews``,
``tours import`` and verdicts as /review writes them (``verdicts.append_verdicts``); each is a
numbered sequence of writes in ``write_paths.py``, run by a writer in a real process
(``subprocess``). A writer is killed with SIGKILL in a write chosen at random, a random pause
into it, at a moment its staging folder is on disk. Then:

- every write it saw acknowledged is in the store whole, the one it was in the middle of whole
  or not at all, none in part; ``store.health`` is clean;
- two writers start at once on what the kill left: the lock orders them, both finish every write
  (nothing lost), and the first write cleans what the kill left.

Bounded: each writer a few small writes, each wait a few seconds at most.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import write_paths
from auditatlas import store, verdicts
from auditatlas.store import MANIFEST, STAGING_PREFIX, TMP_PREFIX
from cli_support import run_cli
from conftest import REPO

N_KILLED, N_OTHER = 4, 2
IN_FLIGHT = (STAGING_PREFIX, TMP_PREFIX, ".manifest-")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return write_paths.base_store(tmp_path_factory.mktemp("writes") / "store")


def _writer(path: str, root: Path, work: Path, tag: str, n: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    return subprocess.Popen([sys.executable, str(REPO / "tests" / "write_paths.py"), path, str(root), str(work), tag,
                             str(n)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            cwd=REPO)


def _ready(proc: subprocess.Popen) -> None:
    line = proc.stdout.readline()
    assert line.strip() == "ready", f"the writer did not start: {line!r}"


def _acked(lines: list[str]) -> int:
    """The last write the writer saw acknowledged (-1: none)."""
    done = [int(line.split()[1]) for line in lines if line.startswith("done ")]
    assert not [line for line in lines if line.startswith("failed")], lines
    return max(done, default=-1)


def _kill_mid_write(proc: subprocess.Popen, root: Path, rng: random.Random) -> list[str]:
    """SIGKILL in a write chosen at random, after a random pause into it, at the first moment
    after that pause that a write is in flight on disk; the lines the writer printed."""
    target = rng.randrange(N_KILLED - 1)  # a later write always follows: the writer is never done
    lines = []
    while len(lines) < target:
        line = proc.stdout.readline()
        assert line.startswith("done "), f"the writer stopped: {line!r}"
        lines.append(line.strip())
    time.sleep(rng.uniform(0.0, 0.3))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if any(p.name.startswith(IN_FLIGHT) for p in root.iterdir()):
            time.sleep(rng.uniform(0.0, 0.005))
            break
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)
    return lines


def _stop(*procs: subprocess.Popen) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


@pytest.mark.parametrize("path", write_paths.PATHS)
def test_kill_9_mid_write_then_two_writers_at_once(path, base, tmp_path):
    root = Path(shutil.copytree(base, tmp_path / "store"))
    rng = random.Random(f"kill-{path}")
    killed = _writer(path, root, tmp_path / "work-a", "A", N_KILLED)
    try:
        _ready(killed)
        printed = _kill_mid_write(killed, root, rng)
        killed.wait(10)
        acked = _acked(printed + killed.stdout.read().splitlines())
    finally:
        _stop(killed)
    # Killed mid-write: the acknowledged writes whole, the one in flight whole or absent, none in part.
    assert store.health(root, deep=True) == []
    whole, part = write_paths.landed(path, root, "A", N_KILLED)
    assert not part, part
    if path == "labels":  # each file replaces the last: the last acknowledged one or the one in flight
        assert whole in ({acked}, {acked + 1}) if acked >= 0 else whole in (set(), {0}), (acked, whole)
    else:
        assert set(range(acked + 1)) <= whole <= set(range(min(acked + 2, N_KILLED))), (acked, whole)
    left = write_paths.leftovers(root)

    # Two writers at once, on what the kill left: the lock orders them, neither loses a write, and
    # the first write that takes the lock cleans the leftovers.
    writers = [_writer(path, root, tmp_path / f"work-{tag}", tag, N_OTHER) for tag in ("B", "C")]
    try:
        outs = [proc.communicate(timeout=60)[0] for proc in writers]
    finally:
        _stop(*writers)
    for proc, out in zip(writers, outs):
        assert proc.returncode == 0 and _acked(out.splitlines()) == N_OTHER - 1, out
    assert store.health(root, deep=True) == []
    assert write_paths.leftovers(root) == [], left
    landed = {tag: write_paths.landed(path, root, tag, N_OTHER) for tag in ("B", "C")}
    assert not any(part for _, part in landed.values()), landed
    if path == "labels":  # the last file of whichever writer wrote last is loaded, whole
        assert sorted(len(whole) for whole, _ in landed.values()) == [0, 1], landed
    else:
        assert all(whole == set(range(N_OTHER)) for whole, _ in landed.values()), landed


# --------------------------------------------------------------------------- malformed input

def _bad_input(path: str, folder: Path) -> tuple[list[str], str, str]:
    """A malformed input of ``path``: its command line, the file it names, a word of the sentence."""
    folder.mkdir()
    if path == "otlp":
        file = folder / "spans.json"
        file.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "0000000000000001",'
                        ' "name": "s", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}')
        return ["ingest", "otlp", str(file), "--corpus", "bad"], "spans.json", "trace id"
    if path == "traces":
        file = folder / "t.json"
        file.write_text('{"schema_version": "ATIF-v1.7", "session_id": "s", "agent": {"name": "a", "version": "1"}, '
                        '"steps": [{"step_id": 1, "source": "robot", "message": "m"}]}')
        return ["ingest", "traces", str(file), "--corpus", "bad"], "field 'steps[0].source'", "robot"
    if path == "labels":
        file = folder / "l.csv"
        file.write_text(f"run_id,step_idx,label\n{write_paths.CORPUS}:x,0,maybe\n")
        return ["ingest", "labels", str(file), "--corpus", write_paths.CORPUS], "field 'label'", "line 2"
    if path == "reviews":
        file = folder / "v.csv"
        file.write_text("run_id,step_idx,verdict,reviewer\nr,0,perhaps,ann\n")
        return ["ingest", "reviews", str(file)], "v.csv", "verdict 'perhaps'"
    file = folder / "tour.json"
    file.write_text('{"name": "t", "stops": [{"link": "/", "sentence": 3}]}')
    return ["tours", "import", str(file)], "tour.json", "stop 1"


@pytest.mark.parametrize("path", write_paths.PATHS)
def test_malformed_input_is_one_sentence_and_changes_nothing(path, base, tmp_path):
    root = Path(shutil.copytree(base, tmp_path / "store"))
    before = (root / MANIFEST).read_bytes()
    if path == "verdicts":
        row = verdicts.verdict(write_paths.CORPUS, "r", 0, "perhaps", "ann")
        with pytest.raises(verdicts.BadVerdict) as info:
            verdicts.append_verdicts(root, [row])
        lines, names, says = [str(info.value)], "verdict 1", "verdict 'perhaps'"
    else:
        argv, names, says = _bad_input(path, tmp_path / "in")
        done = run_cli("--store", str(root), *argv)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        lines = [line for line in done.stderr.splitlines() if line.startswith("error:") and "problem(s)" not in line]
    assert len(lines) == 1 and names in lines[0] and says in lines[0], lines
    assert (root / MANIFEST).read_bytes() == before
