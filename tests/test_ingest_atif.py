"""Trajectories through agentpile: ATIF (written by agentpile), OpenAI message lists, Claude Code
sessions, `ingest traces` detection, bad input, and the Overview on such a corpus."""
from __future__ import annotations

import json
from pathlib import Path

import agentpile as ap
import pytest
from agentpile.formats.messages import messages_to_trajectory

from auditatlas.errors import IngestFailed
from auditatlas.ingest import Context, ingest
from auditatlas.ingest import traces as traces_adapter
from auditatlas.store import MANIFEST
from cli_support import run_cli

MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "It is sunny.", "custom_field": "kept"},
]


def _session_line(kind: str, uuid: str, parent: str | None, message: dict, **more) -> dict:
    return {"type": kind, "sessionId": "sess-1", "uuid": uuid, "parentUuid": parent, "version": "2.1.3",
            "timestamp": "2026-01-05T10:00:00Z", "cwd": "/repo", "message": message, **more}


CLAUDE_CODE = [  # the shape agentpile's reader documents: one assistant record per content block
    {"type": "summary", "summary": "listing files", "leafUuid": "a3"},
    _session_line("user", "u1", None, {"role": "user", "content": "list the files"}),
    _session_line("assistant", "a1", "u1", {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
                                            "content": [{"type": "text", "text": "Let me look."}],
                                            "usage": {"input_tokens": 10, "output_tokens": 5}}),
    _session_line("assistant", "a2", "a1", {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
                                            "content": [{"type": "tool_use", "id": "tu1", "name": "Bash",
                                                         "input": {"command": "ls"}}],
                                            "usage": {"input_tokens": 10, "cache_read_input_tokens": 100,
                                                      "output_tokens": 20}}),
    _session_line("user", "u2", "a2", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tu1", "content": "a.py\nb.py", "is_error": False}]}),
    _session_line("assistant", "a3", "u2", {"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5",
                                            "content": [{"type": "text", "text": "Two files."}],
                                            "usage": {"input_tokens": 30, "output_tokens": 4}}),
]


def _atif_run() -> ap.Run:
    """A record built with agentpile's own API: labels, an outcome and a named dependency rule."""
    labels = [
        {"name": "wrong_answer", "target": {"kind": "step", "address": {"trajectory": "t1", "step": 4}},
         "value": True, "label_source": "my-review"},
        {"name": "reason", "target": {"kind": "step", "address": {"trajectory": "t1", "step": 4}},
         "value": "the forecast said rain", "label_source": "my-review"},
        {"name": "call_ok", "target": {"kind": "call", "address": {"trajectory": "t1", "step": 3, "call": "c1"}},
         "value": False, "label_source": "my-review"},
        {"name": "task_failed", "target": {"kind": "run", "address": {"trajectory": "t1"}}, "value": True,
         "label_source": "my-review"},
    ]
    record = messages_to_trajectory(MESSAGES, trajectory_id="t1", agent_name="helper", model_name="gpt-4o",
                                    ext={"labels": labels, "outcome": {"success": False}, "task": {"id": "paris"}})
    return ap.Run(record).with_deps(["full_context_v1"])


def _write_atif(path: Path) -> Path:
    ap.writers.get("json").write(_atif_run(), path)  # agentpile's ATIF writer
    return path


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _read(fmt: str, path: Path, tmp_path: Path):
    from importlib import import_module

    module = import_module(f"auditatlas.ingest.{fmt.replace('-', '_')}")
    return module.read(path, Context(store=tmp_path / "store"), corpus="mine")


def _extra(row: dict) -> dict:
    return json.loads(row["extra"])


def _edges(batch) -> dict[tuple[int, int], tuple[str, str]]:
    return {(e["src_idx"], e["dst_idx"]): (e["kind"], e["provenance"]) for e in batch.tables["edges"]}


# --------------------------------------------------------------------------- the three formats


def test_atif_written_by_agentpile_keeps_its_labels_and_dependencies(tmp_path):
    batch = _read("atif", _write_atif(tmp_path / "t1.json"), tmp_path)
    (run,) = batch.tables["runs"]
    assert (run["run_id"], run["backbone"], run["outcome"], run["task_id"]) == ("mine:t1", "gpt-4o", "failure", "paris")
    assert run["label_process"] == "agentpile labels (my-review)"
    assert [l["name"] for l in _extra(run)["labels"]] == ["task_failed"]  # a run label sits on no step
    steps = batch.tables["steps"]
    assert [s["action"] for s in steps] == ["SYSTEM", "USER", "LLM", "TOOL:get_weather", "LLM"]
    assert [s["step_id"] for s in steps] == ["1", "2", "3", "3/c1", "4"]
    assert [s["agent"] for s in steps] == ["system", "user", "helper", "helper", "helper"]
    call = steps[3]
    assert call["is_tool"] and (call["text_in"], call["text_out"]) == ('{"city": "Paris"}', "sunny")
    assert (call["label"], call["label_source"]) == (0, "agentpile_label")
    answer = steps[4]
    assert (answer["text_out"], answer["label"], answer["label_source"]) == ("It is sunny.", 1, "agentpile_label")
    kept = _extra(answer)
    assert {l["name"] for l in kept["labels"]} == {"wrong_answer", "reason"}
    assert kept["models"] == ["gpt-4o"]
    assert kept["extra"]["agentpile"]["source_fields"] == {"custom_field": "kept"}  # nothing lost
    assert all(s["label"] is None and s["label_source"] == "unlabeled" for s in steps[:3])
    full_context = {(a, b): ("context", "inferred") for a, b in [(0, 1), (0, 2), (1, 2), (0, 4), (1, 4), (2, 4)]}
    assert _edges(batch) == {(2, 3): ("tool_call", "observed"), (3, 4): ("data", "modeled"), **full_context}


def test_openai_message_list_with_tool_calls(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))  # the bare list: one conversation
    batch = _read("messages", path, tmp_path)
    (run,) = batch.tables["runs"]
    assert run["run_id"] == "mine:conversation-0" and run["outcome"] == "unknown" and run["backbone"] is None
    steps = batch.tables["steps"]
    assert [(s["agent"], s["action"]) for s in steps] == [
        ("system", "SYSTEM"), ("user", "USER"), ("agent", "LLM"), ("agent", "TOOL:get_weather"), ("agent", "LLM")]
    assert steps[2]["text_out"] == "" and _extra(steps[2])["extra"]["agentpile"]["message_state"] == "null"
    assert steps[3]["text_out"] == "sunny" and _extra(steps[3])["call_id"] == "c1"
    assert _edges(batch) == {(2, 3): ("tool_call", "observed"), (3, 4): ("data", "modeled")}
    assert run["label_process"] == "none (unlabeled traces)"


def test_a_claude_code_session(tmp_path):
    batch = _read("claude-code", _write_jsonl(tmp_path / "sess-1.jsonl", CLAUDE_CODE), tmp_path)
    (run,) = batch.tables["runs"]
    assert (run["run_id"], run["backbone"]) == ("mine:sess-1", "claude-sonnet-4-5")
    steps = batch.tables["steps"]
    assert [s["action"] for s in steps] == ["USER", "LLM", "TOOL:Bash", "LLM"]
    assert {s["agent"] for s in steps[1:]} == {"claude-code"}
    turn = steps[1]
    assert turn["text_out"] == "Let me look."
    assert (turn["tokens_in"], turn["tokens_out"]) == (110, 20)  # the message's last usage, cache reads counted
    assert (steps[2]["text_in"], steps[2]["text_out"]) == ('{"command": "ls"}', "a.py\nb.py")
    assert steps[2]["error_code"] is None
    assert _edges(batch) == {(1, 2): ("tool_call", "observed"), (2, 3): ("data", "modeled")}
    assert _extra(run)["agentpile"]["dataset"]["cwd"] == "/repo"


def test_a_failed_tool_call_is_the_steps_error(tmp_path):
    rows = json.loads(json.dumps(CLAUDE_CODE))
    rows[4]["message"]["content"][0]["is_error"] = True
    batch = _read("claude-code", _write_jsonl(tmp_path / "s.jsonl", rows), tmp_path)
    assert batch.tables["steps"][2]["error_code"] == "ERROR"


def _problems(stderr: str) -> list[str]:
    """The problem lines the CLI printed (each ``error: <sentence>``), without its closing count."""
    return [line.removeprefix("error: ") for line in stderr.strip().splitlines()
            if line.startswith("error: ") and "problem(s); the store was left unchanged" not in line]


# --------------------------------------------------------------------------- ingest traces


def _fixtures(tmp_path: Path) -> dict[str, Path]:
    messages = tmp_path / "chat.json"
    messages.write_text(json.dumps({"id": "c9", "messages": MESSAGES}))
    return {"atif": _write_atif(tmp_path / "t1.json"), "messages": messages,
            "claude-code": _write_jsonl(tmp_path / "sess-1.jsonl", CLAUDE_CODE)}


def test_traces_detects_each_format_and_reads_a_folder(tmp_path):
    files = _fixtures(tmp_path)
    for fmt, path in files.items():
        assert traces_adapter.can_read(path)
        batch = traces_adapter.read(path, Context(store=tmp_path / "store"), corpus="mine")
        assert batch.meta["formats"] == [fmt]
        assert batch.tables == _read(fmt, path, tmp_path).tables  # detected, then read as the named format
    store = tmp_path / "store"
    done = run_cli("--store", str(store), "ingest", "traces", str(tmp_path), "--corpus", "mine")
    assert done.returncode == 0, done.stderr
    assert "3 runs (atif, claude-code, messages), 14 steps" in done.stderr


def test_traces_refuses_to_guess(tmp_path):
    store = tmp_path / "store"
    both = tmp_path / "both.json"  # an ATIF trajectory that also carries a message list
    both.write_text(json.dumps({**_atif_run().record, "messages": MESSAGES}))
    unknown = tmp_path / "other.json"
    unknown.write_text('{"hello": 1}')
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "b" * 16, "name": "s", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}))
    for path, words in ((both, ["several agentpile readers", "atif", "openai-messages"]),
                        (unknown, ["not a trajectory agentpile recognizes"]), (spans, ["ingest otlp"])):
        assert not traces_adapter.can_read(path)
        done = run_cli("--store", str(store), "ingest", "traces", str(path), "--corpus", "mine")
        assert done.returncode == 1
        (line,) = _problems(done.stderr)
        assert line.startswith(path.name + ": ") and "Traceback" not in done.stderr
        for word in words:
            assert word in line, line
    assert not (store / MANIFEST).exists()


# --------------------------------------------------------------------------- bad input


def _refused(tmp_path: Path, fmt: str, path: Path, *words: str) -> str:
    store = tmp_path / "store"
    before = (store / MANIFEST).read_text()
    done = run_cli("--store", str(store), "ingest", fmt, str(path), "--corpus", "mine")
    assert done.returncode == 1
    assert "store was left unchanged" in done.stderr and "Traceback" not in done.stderr
    (problem,) = _problems(done.stderr)
    assert problem.startswith(path.name + ": "), problem
    for word in words:
        assert word in problem, problem
    assert (store / MANIFEST).read_text() == before
    return problem


def test_bad_input_is_one_sentence_and_keeps_the_store(tmp_path):
    files = _fixtures(tmp_path)
    ingest("atif", files["atif"], tmp_path / "store", corpus="mine")
    _refused(tmp_path, "atif", files["messages"], "is not an ATIF trajectory", "schema_version")
    _refused(tmp_path, "claude-code", files["atif"], "is not a Claude Code session", ".jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    _refused(tmp_path, "claude-code", empty, "is empty")
    stepless = tmp_path / "stepless.json"
    stepless.write_text(json.dumps({"schema_version": "ATIF-v1.7", "session_id": "s0", "agent": {"name": "a"},
                                    "steps": []}))
    _refused(tmp_path, "atif", stepless, "record 1", "'s0'", "no steps")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in CLAUDE_CODE[:2]) + "{not json\n")
    _refused(tmp_path, "claude-code", broken, "line 3", "not valid JSON")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"messages": MESSAGES}) + "\n" + json.dumps({"turns": []}) + "\n")
    _refused(tmp_path, "messages", mixed, "record 2", "'messages'")
    version = tmp_path / "old.json"
    version.write_text(json.dumps({**_atif_run().record, "schema_version": "ATIF-v1.2"}))
    _refused(tmp_path, "atif", version, "record 1", "ATIF-v1.2")


def test_two_records_with_one_id_are_refused(tmp_path):
    one = _atif_run().record
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(one) + "\n" + json.dumps(one) + "\n")
    with pytest.raises(IngestFailed, match="record 2: trajectory id 't1'"):
        _read("atif", path, tmp_path)


# --------------------------------------------------------------------------- the views on it


def test_overview_queries_run_on_such_a_corpus(tmp_path):
    import queries
    from auditatlas.analyses import step_rates as rates

    store = tmp_path / "store"
    _fixtures(tmp_path)
    ingest("traces", tmp_path, store, corpus="mine")
    run = queries.runner(store)
    assert run("corpora")["corpus"].tolist() == ["mine"]
    counts = run("action_rates", {"slice": {}})
    assert set(counts["action"]) == {"SYSTEM", "USER", "LLM", "TOOL:get_weather", "TOOL:Bash"}
    labeled = counts[counts["labeled_steps"] > 0]
    success = rates.action_success(labeled).set_index(["backbone", "action"])
    assert success.loc[("gpt-4o", "LLM"), "success_pct"] == pytest.approx(0.0)  # its one labeled turn is an anomaly
    assert success.loc[("gpt-4o", "TOOL:get_weather"), "success_pct"] == pytest.approx(100.0)
    summary = run("slice_summary", {"slice": {"corpus": ["mine"]}})
    assert (int(summary["runs"].sum()), int(summary["steps"].sum()), int(summary["labeled_steps"].sum())) == (3, 14, 2)
