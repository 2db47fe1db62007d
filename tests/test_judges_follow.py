"""A judge following a received corpus (``auditatlas judge ... --follow``): a real
``auditatlas receive`` process fed OTLP bodies, the scripted Chat Completions server
(tests/judge_server.py), and the follower as a user runs it. Runs received after the follower
started are judged; a follower killed mid-round resumes from its set and the reply cache, with
no run judged twice and no prediction twice."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from auditatlas.judges.follow import sampled
from cli_support import run_cli
from conftest import REPO
from otlp_fixtures import json_doc, openinference_trace
from queries import runner
from receive_support import post
from test_judges import Server
from test_receive_durability import Receiver

pytestmark = [pytest.mark.xdist_group("judges_follow")]
MODEL = "slow-1000"  # each call 1 s: a kill lands between a cached reply and one in flight


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trace(n: int) -> bytes:
    return json.dumps(json_doc(openinference_trace(f"{n:032x}"))).encode()


class Follower:
    def __init__(self, store: Path, url: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "auditatlas.cli", "--store", str(store), "judge", "--protocol", "all-at-once",
             "--model", MODEL, "--base-url", url, "--slice", "corpus=live", "--max-connections", "1",
             "--follow", "--every", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        # One reader of its output, to its end: its last line is read here, never by a second reader.
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")),
                                       daemon=True)
        self.reader.start()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self.reader.join(10)
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, err
        return err


def _predictions(store: Path) -> list[tuple[str, str, int]]:
    import duckdb

    from auditatlas.store import table_files

    files = table_files(store, "predictions")
    con = duckdb.connect()
    try:
        return con.execute("SELECT set_id, run_id, step_idx FROM read_parquet($1) WHERE set_id LIKE 'judge-%'",
                           [files]).fetchall()
    finally:
        con.close()


def _wait(what, until, timeout: float, lines) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"{what} within {timeout} s; follower said: {lines}"
        time.sleep(0.1)


def _runs_judged(store: Path) -> set[str]:
    return {run for _, run, _ in _predictions(store)} if (store / "MANIFEST.json").exists() else set()


def test_sample_is_stable_and_near_its_rate():
    ids = [f"live:{n:032x}" for n in range(2000)]
    chosen = [i for i in ids if sampled(i, 0.2, seed=7)]
    assert 0.17 < len(chosen) / len(ids) < 0.23
    assert chosen == [i for i in ids if sampled(i, 0.2, seed=7)]  # the same runs every round
    assert chosen != [i for i in ids if sampled(i, 0.2, seed=8)]
    assert set(chosen) <= {i for i in ids if sampled(i, 0.5, seed=7)}  # a larger rate adds runs only
    assert all(sampled(i, 1.0) for i in ids[:10])


def test_follow_flags_are_checked(tmp_path):
    done = run_cli("--store", str(tmp_path / "s"), "judge", "--protocol", "all-at-once", "--model", "m",
                   "--base-url", "http://127.0.0.1:9/v1", "--follow", "--sample", "0")
    assert done.returncode == 2 and "--sample" in done.stderr


def test_follower_judges_received_runs_and_resumes_without_duplicates(tmp_path):
    truths = tmp_path / "truths.json"
    truths.write_text("{}")  # the oracle then answers step 0 for every run
    server = Server(truths)
    store = tmp_path / "store"
    receiver = Receiver(store, _free_port(), "--idle", "0.2")
    follower = None
    try:
        receiver.start()
        assert post(receiver.url, _trace(1)).status == 200
        _wait("the first trace written", lambda: (store / "MANIFEST.json").exists()
              and "live" in json.loads((store / "MANIFEST.json").read_text())["sources"], 20, receiver.lines)
        follower = Follower(store, server.url)
        assert post(receiver.url, _trace(2)).status == 200  # received after the follower started
        runs = {f"live:{1:032x}", f"live:{2:032x}"}
        _wait("runs 1 and 2 judged", lambda: _runs_judged(store) >= runs, 25, follower.lines)
        assert server.calls(MODEL) == 2

        # Two more runs in one request, so one receiver write holds both and one round judges both;
        # the follower is killed once the second one's call is in flight (calls go one at a time,
        # so the third run's reply is in the cache by then and no set was written).
        both = json_doc(openinference_trace(f"{3:032x}") + openinference_trace(f"{4:032x}"))
        assert post(receiver.url, json.dumps(both).encode()).status == 200
        _wait("the fourth run's call", lambda: server.calls(MODEL) >= 4, 25, follower.lines)
        follower.kill()
        assert _runs_judged(store) == runs
        paid = server.calls(MODEL)

        follower = Follower(store, server.url)
        every = runs | {f"live:{3:032x}", f"live:{4:032x}"}
        _wait("runs 3 and 4 judged after the restart", lambda: _runs_judged(store) >= every, 25, follower.lines)
        follower.stop()
        # Runs 1-3 were paid once each; only a call cut off by the kill is made again.
        assert server.calls(MODEL) - paid <= 1 and server.calls(MODEL) <= 5
        rows = _predictions(store)
        assert len(rows) == len(set(rows))  # no prediction twice
        assert len({set_id for set_id, _, _ in rows}) == 1
        steps = runner(store)("judge_follow_runs", {"slice": {"corpus": ["live"]}}).set_index("run_id")["n_steps"]
        assert {run: sum(1 for _, r, _ in rows if r == run) for run in every} == {run: int(steps[run]) for run in every}
        said = "\n".join(follower.lines)
        assert "round 1:" in said and "wrote judge-" in said and "stopped after" in said
    finally:
        if follower is not None and follower.proc.poll() is None:
            follower.kill()
        if receiver.proc is not None and receiver.proc.poll() is None:
            receiver.kill()
        server.kill()
