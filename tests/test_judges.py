"""LLM judges (auditatlas/judges, ``auditatlas judge``) against a real local Chat Completions
server the tests start (tests/judge_server.py, localhost only), through the official client.

Expected values come from the Who&When release files (the decisive step and agent each run
names), read here with json, never from the code under test.
"""
from __future__ import annotations

import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from auditatlas.analyses.board_registry import run_board
from auditatlas.ingest import ingest
from auditatlas.judges import contract
from auditatlas.judges.contract import Abstention
from cli_support import run_cli
from conftest import REPO, WHOWHEN
from queries import runner

pytestmark = [pytest.mark.xdist_group("judges")]
SERVER = REPO / "tests" / "judge_server.py"
N_RUNS = 126  # Algorithm-Generated: one run per file
LEVEL_3 = ["--slice", "difficulty=3"]  # 4 runs: the slow scripts' slice
LEVEL_3_RUNS = 4


def _truths() -> dict:
    out = {}
    for path in glob.glob(str(WHOWHEN / "*.json")):
        record = json.loads(Path(path).read_text())
        out[record["question"]] = {"step": int(record["mistake_step"]), "agent": record["mistake_agent"]}
    return out


class Server:
    """tests/judge_server.py in a process of its own (so a test can kill it)."""

    def __init__(self, truths: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(SERVER), str(truths)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("port "), self.proc.stderr.read()
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.time() + 30
        while True:
            try:
                self.stats()
                break
            except OSError:
                assert time.time() < deadline, "the scripted server did not start"
                time.sleep(0.1)

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as r:
            return json.loads(r.read())

    def calls(self, model: str) -> int:
        return int(self.stats()["calls"].get(model, 0))

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture(scope="module")
def truths_file(tmp_path_factory):
    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen")
    path = tmp_path_factory.mktemp("judge-truths") / "truths.json"
    path.write_text(json.dumps(_truths()))
    return path


@pytest.fixture(scope="module")
def server(truths_file):
    s = Server(truths_file)
    yield s
    s.kill()


@pytest.fixture(scope="module")
def store(tmp_path_factory, truths_file):
    root = tmp_path_factory.mktemp("judges") / "store"
    ingest("whowhen", WHOWHEN, root)
    return root


def judge(store: Path, server: Server, protocol: str, model: str, *extra: str, env: dict | None = None):
    return run_cli("--store", str(store), "judge", "--protocol", protocol, "--model", model,
                   "--base-url", server.url, *extra, env=env)


def board_rows(store: Path) -> dict:
    result = run_board("post-localization", runner(store), "whowhen")
    return {row.entrant: row for row in result.rows}, result


def sets_of(store: Path, source: str):
    return runner(store)("prediction_sets", {"corpus": "whowhen", "granularity": "step"}).query(
        "source_file == @source")


# ------------------------------------------------------------------------------------- contract

def test_contract_matches_steps_and_agents_exactly():
    agents = {"Verification_Expert", "WebServing_Expert"}
    got = contract.pick('{"agent": "Verification_Expert", "step": 1, "extra": [1]}', 12, agents)
    assert (got.step, got.agent) == (1, "Verification_Expert")
    # A fenced object is the same reply; the name must be exact (no substring, no case folding).
    got = contract.pick('```json\n{"agent": "verification_expert", "step": 11}\n```', 12, agents)
    assert (got.step, got.agent) == (11, None)
    for bad, reason in [('{"agent": "WebServing_Expert", "step": "1"}', "contract"),
                        ('{"agent": "WebServing_Expert", "step": true}', "contract"),
                        ('{"agent": "WebServing_Expert", "step": 1.0}', "contract"),
                        ('{"agent": "WebServing_Expert", "step": 12}', "step"),
                        ('The mistake is at step 1 or 12.', "unparsed"),
                        ('{"step": 1} and that is my answer', "unparsed"),
                        ('[1]', "unparsed"), ("", "empty"), (None, "empty"), ("  \n", "empty")]:
        with pytest.raises(Abstention) as caught:
            contract.pick(bad, 12, agents)
        assert caught.value.reason == reason, bad
    with pytest.raises(Abstention):
        contract.half('{"half": "Upper"}')
    with pytest.raises(Abstention):
        contract.scores('{"scores": [{"step": 0, "p": 0.2}]}', range(0, 2))  # step 1 unscored
    with pytest.raises(Abstention):
        contract.scores('{"scores": [{"step": 0, "p": 1.5}, {"step": 1, "p": 0}]}', range(0, 2))
    assert contract.mistake('{"mistake": false, "reason": "fine"}').mistake is False


# ----------------------------------------------------------------------------- oracle and random

@pytest.mark.parametrize("protocol", ["all-at-once", "step-by-step", "binary-search", "step-score"])
def test_oracle_judge_is_100_percent_on_the_localization_board(store, server, protocol):
    done = judge(store, server, protocol, "oracle", "--max-connections", "8")
    assert done.returncode == 0, done.stderr
    assert f"{N_RUNS} of {N_RUNS} runs judged, 0 abstained" in done.stdout
    rows, _ = board_rows(store)
    row = rows[f"llm-judge {protocol} (oracle) [auditatlas]"]
    assert row.kind == "judge" and row.n_items == N_RUNS and row.coverage == 1.0
    assert row.metrics == {"top1": 1.0, "top3": 1.0, "mrr": 1.0}

    # Re-running the same judge costs no call and replaces its set (one entrant, not two).
    before = server.calls("oracle")
    again = judge(store, server, protocol, "oracle", "--max-connections", "8")
    assert again.returncode == 0, again.stderr
    assert server.calls("oracle") == before
    assert " 0 new calls" in again.stdout
    rows, _ = board_rows(store)
    assert sum(1 for name in rows if name.startswith(f"llm-judge {protocol} (oracle)")) == 1


def test_oracle_calls_per_protocol_follow_the_protocols(store, server):
    """Who&When's costs: all-at-once 1 call per run; step-by-step the truth step + 1 calls;
    binary search ceil(log2 n) or one fewer; counted from the release files."""
    records = [json.loads(Path(p).read_text()) for p in glob.glob(str(WHOWHEN / "*.json"))]
    sizes = [len(r["history"]) for r in records]
    by_step = sum(int(r["mistake_step"]) + 1 for r in records)
    for protocol, low, high in [("all-at-once", N_RUNS, N_RUNS), ("step-by-step", by_step, by_step),
                                ("binary-search", sum(max(n - 1, 1).bit_length() - 1 for n in sizes),
                                 sum((n - 1).bit_length() for n in sizes))]:
        done = judge(store, server, protocol, "oracle")
        assert done.returncode == 0
        source = done.stdout.split("into source '")[1].split("'")[0]
        params = json.loads(sets_of(store, source)["params"].iloc[0])
        assert low <= params["calls"] <= high, protocol
        assert params["tokens_in"] == 100 * params["calls"]  # the server's usage: 100 in, 10 out per call


def test_uniform_random_judge_lands_within_the_random_floor(store, server):
    done = judge(store, server, "all-at-once", "random", "--max-connections", "8")
    assert done.returncode == 0, done.stderr
    rows, _ = board_rows(store)
    judge_row = rows["llm-judge all-at-once (random) [auditatlas]"]
    floor = rows["random"]
    low, high = judge_row.intervals["top1"]
    # The judge's own 95% interval holds the floor's value, and the floor's interval overlaps it.
    assert low <= floor.metrics["top1"] <= high
    assert judge_row.metrics["top1"] < 0.3


# ----------------------------------------------------------------------- abstentions, endpoints

@pytest.mark.parametrize("model, reason", [("malformed", "unparsed"), ("empty", "empty")])
def test_unreadable_replies_are_abstentions_stated_on_the_board(store, server, model, reason):
    done = judge(store, server, "all-at-once", model)
    assert done.returncode == 0, done.stderr
    assert f"{N_RUNS} abstained" in done.stdout
    source = done.stdout.split("into source '")[1].split("'")[0]
    meta = sets_of(store, source)
    params = json.loads(meta["params"].iloc[0])
    assert params["abstentions"] == {reason: N_RUNS} and params["abstention_rate"] == 1.0
    if model == "empty":
        assert params["empty_replies"] == {"length": N_RUNS}
    # No prediction: never a hit, never a miss; the board says why the set scores nothing.
    rows, result = board_rows(store)
    assert not any(name.startswith(f"llm-judge all-at-once ({model})") for name in rows)
    assert any(f"abstained on {N_RUNS} of {N_RUNS} runs" in c.entrant for c in result.coverage)


def test_user_template_is_stored_with_the_set(store, server, tmp_path):
    template = tmp_path / "t.txt"
    template.write_text("## Task\n$task\n\n## Log\nThe log holds $n_steps steps.\n\n$log\n\n"
                        "The agents of this log are:\n$agents.\n")
    done = judge(store, server, "all-at-once", "random", "--template", str(template))
    assert done.returncode == 0, done.stderr
    source = done.stdout.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["template"]["text"] == template.read_text()
    assert params["variant"].startswith("auditatlas, template ")
    assert params["abstentions"] == {}  # the random answerer still answers by the contract
    assert "[auditatlas, template " in "".join(board_rows(store)[0])


def test_endpoint_refusing_json_mode_is_asked_again_in_plain_text(store, server):
    done = judge(store, server, "all-at-once", "nojson", "--max-connections", "8")
    assert done.returncode == 0, done.stderr
    assert "refused JSON mode" in done.stderr
    rows, _ = board_rows(store)
    assert rows["llm-judge all-at-once (nojson) [auditatlas]"].metrics["top1"] == 1.0
    source = done.stdout.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["json_mode"].startswith("refused by the endpoint: response_format is not supported")


def test_429_with_retry_after_is_honoured(store, server):
    began = time.perf_counter()
    done = judge(store, server, "all-at-once", "ratelimit", *LEVEL_3)
    assert done.returncode == 0, done.stderr
    assert time.perf_counter() - began >= 1.0  # Retry-After: 1, where the first backoff is under 0.5 s
    source = done.stdout.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["retries"] == LEVEL_3_RUNS and params["abstained"] == 0 and params["failed_calls"] == 0


def test_500s_are_retried_with_backoff(store, server):
    done = judge(store, server, "all-at-once", "flaky", *LEVEL_3)
    assert done.returncode == 0, done.stderr
    source = done.stdout.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["retries"] == 2 * LEVEL_3_RUNS and params["abstained"] == 0
    assert server.calls("flaky") == 3 * LEVEL_3_RUNS


def test_slow_replies_time_out_as_failed_abstentions_then_pass_with_time(store, server):
    done = judge(store, server, "all-at-once", "slow-1500", *LEVEL_3, "--timeout", "0.3", "--max-retries", "1")
    assert done.returncode == 0, done.stderr
    source = done.stdout.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["abstentions"] == {"failed": LEVEL_3_RUNS} and params["failed_calls"] == LEVEL_3_RUNS
    assert params["retries"] == LEVEL_3_RUNS
    # The failures were not cached: given time, the same judge answers every run.
    done = judge(store, server, "all-at-once", "slow-1500", *LEVEL_3, "--timeout", "5")
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["abstained"] == 0 and params["new_calls"] == LEVEL_3_RUNS
    assert params["latency"]["p50_s"] >= 1.5


def test_budget_stops_cleanly_and_a_rerun_extends_the_set(store, server):
    done = judge(store, server, "all-at-once", "slow-1", "--max-calls", "50", "--max-connections", "4")
    assert done.returncode == 0, done.stderr
    assert "--max-calls 50 reached" in done.stderr
    source = done.stdout.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["new_calls"] == 50 and params["runs"] == 50 and params["not_judged"] == N_RUNS - 50
    assert server.calls("slow-1") == 50
    done = judge(store, server, "all-at-once", "slow-1", "--max-connections", "4")
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    assert params["new_calls"] == N_RUNS - 50 and params["cached_calls"] == 50 and params["runs"] == N_RUNS
    assert server.calls("slow-1") == N_RUNS


# ---------------------------------------------------------------------------- kills and resume

def _cli(store: Path, url: str, model: str, *extra: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "auditatlas.cli", "--store", str(store), "judge", "--protocol",
                             "all-at-once", "--model", model, "--base-url", url, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def _cached(store: Path, model: str) -> int:
    path = store / "judge-cache" / "replies.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path, timeout=30) as db:
        try:
            return db.execute("SELECT count(*) FROM replies WHERE model = ?", (model,)).fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def _manifest_sources(store: Path) -> set[str]:
    return set(json.loads((store / "MANIFEST.json").read_text())["sources"])


def test_judge_killed_mid_run_resumes_without_paying_twice(store, server):
    before = _manifest_sources(store)
    proc = _cli(store, server.url, "slow-100", "--max-connections", "2")
    deadline = time.time() + 120
    while _cached(store, "slow-100") < 20:
        assert time.time() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert _manifest_sources(store) == before  # no half-written set: no set at all
    with sqlite3.connect(store / "judge-cache" / "replies.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT content FROM replies WHERE model = 'slow-100'").fetchall()
    assert all(json.loads(content)["step"] >= 0 for (content,) in rows)  # every row whole
    kept, served = len(rows), server.calls("slow-100")
    done = judge(store, server, "all-at-once", "slow-100", "--max-connections", "8")
    assert done.returncode == 0, done.stderr
    assert f"{N_RUNS - kept} new calls, {kept} from the cache" in done.stdout
    assert server.calls("slow-100") == served + N_RUNS - kept
    rows_, _ = board_rows(store)
    assert rows_["llm-judge all-at-once (slow-100) [auditatlas]"].metrics["top1"] == 1.0


def test_server_killed_mid_run_leaves_failed_abstentions_that_a_rerun_fills(store, truths_file):
    dying = Server(truths_file)
    # No retries: each call after the kill fails at once (the retry rules have tests of their own).
    proc = _cli(store, dying.url, "slow-101", "--max-connections", "2", "--max-retries", "0", "--timeout", "5")
    deadline = time.time() + 120
    while _cached(store, "slow-101") < 10:
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.05)
    dying.kill()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "failed" in out
    source = out.split("into source '")[1].split("'")[0]
    params = json.loads(sets_of(store, source)["params"].iloc[0])
    kept = _cached(store, "slow-101")
    assert params["abstentions"] == {"failed": N_RUNS - kept}
    # The board scores the runs it answered and says how many it did not.
    rows, result = board_rows(store)
    assert rows["llm-judge all-at-once (slow-101) [auditatlas]"].n_items == kept
    assert f"llm-judge all-at-once (slow-101) [auditatlas]: abstained on {N_RUNS - kept} of {N_RUNS} runs" in \
        " ".join(result.notes)
    revived = Server(truths_file)
    try:
        done = judge(store, revived, "all-at-once", "slow-101", "--max-connections", "8")
        assert done.returncode == 0, done.stderr
        assert revived.calls("slow-101") == N_RUNS - kept
        params = json.loads(sets_of(store, source)["params"].iloc[0])
        assert params["abstained"] == 0 and params["runs"] == N_RUNS
    finally:
        revived.kill()


# ------------------------------------------------------------------------------- key and input

def test_api_key_reaches_the_endpoint_and_nothing_else(store, server, tmp_path):
    key = "sk-test-" + os.urandom(12).hex()
    done = judge(store, server, "all-at-once", "slow-2", "--api-key-env", "JUDGE_TEST_KEY", *LEVEL_3,
                 env={"JUDGE_TEST_KEY": key})
    assert done.returncode == 0, done.stderr
    assert f"Bearer {key}" in server.stats()["authorization"]  # the key was used
    assert key not in done.stdout + done.stderr
    export = tmp_path / "boards.html"
    shown = run_cli("--store", str(store), "export", "/boards?tab=POST", "--out", str(export))
    assert shown.returncode == 0, shown.stderr
    assert "slow-2" in export.read_text()  # the export shows the judge...
    needle = key.encode()
    for path in list(store.rglob("*")) + [export]:
        if path.is_file():
            assert needle not in path.read_bytes(), path  # ...and the key nowhere


@pytest.mark.parametrize("args, says", [
    (["--base-url", "ftp://x"], "is not an http(s) URL"),
    (["--max-cost", "1"], "--max-cost needs --price-in and --price-out"),
    (["--slice", "corpus=nope"], "the slice holds no run"),
])
def test_bad_requests_are_one_sentence(store, server, args, says):
    argv = ["--store", str(store), "judge", "--protocol", "all-at-once", "--model", "oracle",
            "--base-url", server.url, *args]
    done = run_cli(*argv)
    assert done.returncode == 1 and says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_bad_template_and_bad_cache_are_one_sentence(store, server, tmp_path):
    template = tmp_path / "t.txt"
    template.write_text("Judge $log for $answer_key")
    done = judge(store, server, "all-at-once", "oracle", "--template", str(template))
    assert done.returncode == 1 and "variable $answer_key is not one the all-at-once protocol fills" in done.stderr
    template.write_bytes(b"\xff\xfe$log")
    done = judge(store, server, "all-at-once", "oracle", "--template", str(template))
    assert done.returncode == 1 and "is not UTF-8 text" in done.stderr
    broken = tmp_path / "broken"
    ingest("whowhen", WHOWHEN, broken)
    (broken / "judge-cache").mkdir()
    (broken / "judge-cache" / "replies.sqlite").write_bytes(b"not a database at all" * 100)
    done = judge(broken, server, "all-at-once", "oracle")
    assert done.returncode == 1 and "is not a judges' reply cache" in done.stderr
    assert "Traceback" not in done.stderr


def test_two_judges_at_once_share_the_cache_without_a_lost_or_torn_reply(store, server):
    first = _cli(store, server.url, "slow-3", "--max-connections", "4")
    second = _cli(store, server.url, "slow-3", "--max-connections", "4")
    outs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [err for _, err in outs]
    with sqlite3.connect(store / "judge-cache" / "replies.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT content FROM replies WHERE model = 'slow-3'").fetchall()
    assert len(rows) == N_RUNS and all(json.loads(c)["step"] >= 0 for (c,) in rows)
    # Both wrote the same judge's source (one replaced the other): one entrant on the board.
    rows_, _ = board_rows(store)
    assert rows_["llm-judge all-at-once (slow-3) [auditatlas]"].metrics["top1"] == 1.0
    assert sum(1 for name in rows_ if "(slow-3)" in name) == 1


def test_a_judge_runs_where_an_event_loop_already_runs(store, server):
    """A notebook, a test runner or an app may call the engine from inside a running loop."""
    import asyncio

    from auditatlas.judges.engine import JudgeConfig
    from auditatlas.judges.engine import judge as run_judge

    async def inside() -> object:
        return run_judge(store, JudgeConfig("all_at_once", "slow-4", server.url), {"difficulty": ["3"]})

    # In a thread of its own: the suite's worker may already run a loop in its main thread (the
    # browser tests' Playwright), where this test's own asyncio.run could not start one.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(lambda: asyncio.run(inside())).result()
    assert result.judged == LEVEL_3_RUNS and result.meter.new_calls == LEVEL_3_RUNS
