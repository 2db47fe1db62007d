"""kill -9 of a reviewer's process in the middle of writing a verdict.

A forked process (a real process: the kill is the kernel's SIGKILL, nothing of it runs after)
gives verdicts one write at a time; its fourth write is stopped inside the manifest switch, the
commit point, with the new Parquet part renamed into ``sources/`` and the new manifest half
written to its temporary file. Killed there, the store must read as it was after the third
write: every earlier verdict, none of the fourth, no check failing; and the next write works.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import queries
import review_store
from auditatlas import store, verdicts

EARLIER = 3


def _reviewer(root: str, ids, paused) -> None:
    """Three whole writes, then a fourth that stops half way through writing the manifest."""
    for i in range(EARLIER):
        row = verdicts.verdict("r", "r:a", i, "anomaly", "ann")
        verdicts.append_verdicts(root, [row])
        ids.put(row["verdict_id"])

    def half_then_stop(at: Path, manifest: dict) -> None:
        import json
        import tempfile
        import time

        text = json.dumps(manifest)
        fd, _ = tempfile.mkstemp(prefix=".manifest-", dir=at)
        os.write(fd, text[: len(text) // 2].encode())
        os.fsync(fd)
        paused.set()
        time.sleep(60)  # the kill comes here

    store._write_manifest = half_then_stop
    verdicts.append_verdicts(root, [verdicts.verdict("r", "r:a", 3, "normal", "ann")])


def test_kill_9_mid_write_keeps_every_earlier_verdict(tmp_path):
    root = review_store.build(tmp_path / "store")
    context = multiprocessing.get_context("fork")  # no new interpreter: a few milliseconds
    ids, paused = context.Queue(), context.Event()
    child = context.Process(target=_reviewer, args=(str(root), ids, paused))
    child.start()
    try:
        assert paused.wait(30), "the reviewer's fourth write never reached the manifest switch"
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL
    earlier = sorted(ids.get(timeout=5) for _ in range(EARLIER))
    # The half-written manifest and the part of the killed write are on disk, unreferenced.
    assert any(p.name.startswith(".manifest-") for p in root.iterdir())

    history = queries.run("review_history", root=root)
    assert sorted(history["verdict_id"]) == earlier
    assert list(history.sort_values("step_idx")["step_idx"]) == [0, 1, 2]
    assert store.health(root, deep=True) == []

    # The kernel released the dead writer's lock: the next write takes it, clears the leftovers
    # and keeps everything.
    verdicts.append_verdicts(root, [verdicts.verdict("r", "r:a", 3, "unsure", "bob")])
    history = queries.run("review_history", root=root)
    assert len(history) == EARLIER + 1 and set(earlier) <= set(history["verdict_id"])
    assert not any(p.name.startswith(".manifest-") for p in root.iterdir())
