"""The receiver's writes in sorted segments (auditatlas/store_segments.py): many writes into one
source answer as one file ingest of the same spans, re-opened traces still replace their run, a
killed write leaves the store as it was, and the rows written again stay O(n log n).

Real DuckDB over the Parquet the writes leave; the receiver fed as its HTTP handler feeds it
(decoded request bodies), without the server: the writes are the point here, not HTTP.
"""
from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from auditatlas import store, store_segments
from auditatlas.ingest import ingest
from auditatlas.ingest.otlp_spans import decode_body
from auditatlas.ingest.receiver import Settings
from auditatlas.ingest.receiver.service import Receiver
from auditatlas.store import health, read_manifest, table_files
from cli_support import run_cli
from otlp_fixtures import genai_trace, json_doc, openinference_trace, write_json
from receive_support import rows

REPO = Path(__file__).resolve().parent.parent


def _trace_ids(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(n)]


def _trace(i: int, trace_id: str) -> list:
    return openinference_trace(trace_id) if i % 2 == 0 else genai_trace(trace_id)


def _receiver(root: Path, lines: list[str]) -> Receiver:
    return Receiver(root, "live", Settings(idle_s=0.0), say=lines.append)


def _write(receiver: Receiver, spans: list):
    """One request's spans accepted, then written: what the writer thread does once they are due."""
    body = json.dumps(json_doc(spans)).encode()
    accepted = receiver.accept(decode_body(body, "json", "test request"), body, "json")
    assert accepted.kept == len(spans) and not accepted.rejected
    return receiver.flush(force=True)


@pytest.fixture()
def small_parts(monkeypatch):
    """Parts of a few rows, so a handful of traces make segments of several parts and a dropped
    run re-writes one part of many (the rule is the same at 32,768 rows a part)."""
    monkeypatch.setattr(store_segments, "SEGMENT_PART_ROWS", 8)


def _received(root: Path, ids: list[str]) -> tuple[list, int]:
    """Every trace of ``ids`` sent in 13 writes; the first span of every fifth trace (its root,
    ending last) held back and sent four writes later, when its run has moved into an older
    (often merged) segment. Returns every span sent and how many writes replaced a run."""
    lines: list[str] = []
    receiver = _receiver(root, lines)
    late: dict[int, list] = {}
    sent, reopened = [], 0
    for w in range(13):
        batch = []
        for i in range(w * 3, min(len(ids), w * 3 + 3)):
            spans = _trace(i, ids[i])
            if i % 5 == 0:
                late.setdefault(w + 4, []).extend(spans[:1])
                spans = spans[1:]
            batch += spans
        batch += late.pop(w, [])
        if batch:
            written = _write(receiver, batch)
            reopened += written.reopened
            sent += batch
    for spans in late.values():
        reopened += _write(receiver, spans).reopened
        sent += spans
    return sent, reopened


def _segment_keys(root: Path, table: str) -> list[list[tuple]]:
    """Each segment's sort keys in the order its parts hold them (``part-g<segment>-<n>``)."""
    import pyarrow.parquet as pq

    keys = {"runs": ["run_id"], "steps": ["run_id", "step_idx"], "edges": ["run_id", "dst_idx", "src_idx"]}[table]
    segments: dict[str, list[tuple]] = {}
    for f in table_files(root, table):
        rows = pq.read_table(f, columns=keys).to_pydict()
        segments.setdefault(Path(f).name.split("-")[1], []).extend(zip(*(rows[k] for k in keys)))
    return [segments[name] for name in sorted(segments)]


def test_many_writes_answer_as_one_file_ingest(tmp_path, small_parts):
    import queries

    ids = _trace_ids(39)
    sent, reopened = _received(tmp_path / "received", ids)
    assert reopened == 8  # traces 0, 5, ..., 35: each root arrived after its trace was written
    ingest("otlp", write_json(tmp_path / "all.json", sent), tmp_path / "file", corpus="live")
    received, file = tmp_path / "received", tmp_path / "file"

    layout = read_manifest(received)["sources"]["live"]["segments"]
    assert len(layout["steps"]) >= 2, layout  # the test must see several segments, or it proves nothing
    for table in ("runs", "steps", "edges"):
        assert _segment_keys(received, table) == [sorted(keys) for keys in _segment_keys(received, table)], table
        assert [len(keys) for keys in _segment_keys(received, table)] == layout[table]
    assert health(received, deep=True) == []
    for table in ("runs", "steps", "edges"):
        assert rows(received, table, "live") == rows(file, table, "live"), table
    assert [r["run_id"] for r in rows(received, "runs", "live")] == sorted(f"live:{t}" for t in ids)

    ask = {root: queries.runner(root) for root in (received, file)}
    bare = {"slice": {"corpus": ["live"]}}
    for name, params in [("slice_summary", bare), ("action_rates", bare), ("silent_failures", bare)]:
        assert ask[received](name, params).equals(ask[file](name, params)), name
    for trace_id in ids[::4]:
        run = {"run": f"live:{trace_id}", "labels": "released"}
        for name in ("explorer_run", "explorer_steps"):
            a, b = ask[received](name, run), ask[file](name, run)
            assert a.drop(columns=["source_file"], errors="ignore").equals(b.drop(columns=["source_file"], errors="ignore")), name
        assert ask[received]("explorer_edges", {"run": run["run"]}).equals(ask[file]("explorer_edges", {"run": run["run"]}))

    def answers(root: Path, *command: str) -> dict:
        done = run_cli("--store", str(root), *command, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    hits = {root: answers(root, "search", "results", "--limit", "100") for root in (received, file)}
    key = lambda h: (-h["score"], h["run_id"], h["step_idx"])  # noqa: E731 - equal scores in any order
    assert hits[received]["total"] == hits[file]["total"] > 0
    assert sorted(hits[received]["hits"], key=key) == sorted(hits[file]["hits"], key=key)
    similar = {root: answers(root, "similar", f"live:{ids[1]}", "1", "--k", "5") for root in (received, file)}
    assert similar[received] == similar[file]


def test_a_reopened_trace_in_an_old_segment_replaces_its_run(tmp_path, small_parts):
    root, lines = tmp_path / "store", []
    receiver = _receiver(root, lines)
    ids = _trace_ids(12, seed=3)
    first = openinference_trace(ids[0])
    _write(receiver, first[1:])  # the root ends last
    for trace_id in ids[1:]:
        _write(receiver, genai_trace(trace_id))
    before = read_manifest(root)["sources"]["live"]
    written = _write(receiver, first[:1])
    assert written.reopened == 1 and written.run_ids[ids[0]] == f"live:{ids[0]}"
    assert written.rewritten > 0  # its run's part re-written without it (and any merge due)
    runs = rows(root, "runs", "live")
    assert [r["run_id"] for r in runs].count(f"live:{ids[0]}") == 1 and len(runs) == 12
    ingest("otlp", write_json(tmp_path / "a.json", first), tmp_path / "file", corpus="live")
    assert [r for r in rows(root, "steps", "live") if r["run_id"] == f"live:{ids[0]}"] == rows(tmp_path / "file", "steps", "live")
    after = read_manifest(root)["sources"]["live"]
    assert sum(after["segments"]["steps"]) == sum(before["segments"]["steps"]) + 1
    assert after["rows"]["steps"] == sum(after["segments"]["steps"]) == 6 + 11 * 5


# Enough writes for the quadratic sum to stand well apart (5.4x at 40 writes, 4.2x at 30).
WRITES = 40


def test_rows_written_again_stay_n_log_n(tmp_path):
    """Writes of one trace each: a write that sorted the whole source again wrote every row
    again (the sum of the source's rows after each write, quadratic); segments re-write each row
    O(log n) times (the writer's own count, ``SourceWriter.rewritten``)."""
    root, lines = tmp_path / "store", []
    receiver = _receiver(root, lines)
    rewritten, held, whole_source_each_time = [], 0, 0
    for i, trace_id in enumerate(_trace_ids(WRITES, seed=11)):
        written = _write(receiver, _trace(i, trace_id))
        rewritten.append(written.rewritten)
        held = sum(read_manifest(root)["sources"]["live"]["rows"][t] for t in ("runs", "steps", "edges"))
        whole_source_each_time += held
        # Never more segments than the geometric rule allows: log base 3 of the rows, plus one.
        assert len(read_manifest(root)["sources"]["live"]["segments"]["steps"]) <= math.log(held, 3) + 1
    assert sum(rewritten) <= held * math.log2(held), (sum(rewritten), held)
    assert sum(rewritten) < whole_source_each_time / 4
    # And not all in one write: a write re-writes at most the source once.
    assert max(rewritten) <= held


KILLED = textwrap.dedent("""
    import json, os, signal, sys
    from pathlib import Path
    from auditatlas import store_segments
    from auditatlas.ingest.otlp_spans import decode_body
    from auditatlas.ingest.receiver import Settings
    from auditatlas.ingest.receiver.service import Receiver
    sys.path.insert(0, sys.argv[3])
    from otlp_fixtures import genai_trace, json_doc

    def killed_mid_merge(*args, **kwargs):  # the segments merged into new parts, the manifest not switched
        os.kill(os.getpid(), signal.SIGKILL)
    store_segments.finalize = killed_mid_merge
    receiver = Receiver(Path(sys.argv[1]), "live", Settings(idle_s=0.0), say=lambda line: None)
    body = json.dumps(json_doc(genai_trace(sys.argv[2]))).encode()
    receiver.accept(decode_body(body, "json", "r"), body, "json")
    receiver.flush(force=True)
""")


def test_a_write_killed_mid_merge_leaves_the_store_as_it_was(tmp_path, small_parts):
    root, lines = tmp_path / "store", []
    receiver = _receiver(root, lines)
    ids = _trace_ids(5, seed=5)
    for trace_id in ids[:4]:
        _write(receiver, genai_trace(trace_id))
    receiver.close()  # its journal too: one receiver per corpus at a time
    manifest = (root / store.MANIFEST).read_bytes()
    before = {t: rows(root, t, "live") for t in ("runs", "steps", "edges")}
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", KILLED, str(root), ids[4], str(REPO / "tests")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert any(p.name.startswith(store.STAGING_PREFIX) for p in root.iterdir())  # it died mid-write
    assert (root / store.MANIFEST).read_bytes() == manifest
    assert {t: rows(root, t, "live") for t in before} == before
    assert health(root, deep=True) == []
    # The next write removes the leftovers and adds its trace to the four.
    written = _write(_receiver(root, lines), genai_trace(ids[4]))
    assert written.n_runs == 5 and not any(p.name.startswith(store.STAGING_PREFIX) for p in root.iterdir())
    assert len(rows(root, "runs", "live")) == 5


def test_a_write_whose_rows_break_an_invariant_lands_nothing(tmp_path):
    """The added rows alone are checked (the carried ones were, when they landed), and their run
    ids against the carried runs': a repeated run id is refused as one whole source would be."""
    root = tmp_path / "store"
    receiver = _receiver(root, [])
    ids = _trace_ids(2, seed=9)
    _write(receiver, genai_trace(ids[0]))
    _write(receiver, genai_trace(ids[1]))
    manifest = (root / store.MANIFEST).read_bytes()
    held = rows(root, "runs", "live")[0]
    with store.SourceWriter(root, "live") as writer:
        writer.carry_segments(skip=("corpora",))
        writer.append({"runs": [{**held, "n_steps": 0}]})  # a run of its own, but under a held id
        with pytest.raises(store.StoreError, match="run ids are unique"):
            writer.commit()
    with store.SourceWriter(root, "live") as writer:
        writer.carry_segments(skip=("corpora",))
        writer.append({"steps": [{"run_id": held["run_id"], "corpus": "live", "step_idx": 5}]})
        with pytest.raises(store.StoreError, match="every step belongs to a run of this source"):
            writer.commit()
    assert (root / store.MANIFEST).read_bytes() == manifest


def test_merges_due_keeps_segments_geometric():
    assert store_segments.merges_due([]) == store_segments.merges_due([10]) == 0
    assert store_segments.merges_due([30, 10]) == 0  # 30 >= 3 x 10
    assert store_segments.merges_due([29, 10]) == 2
    assert store_segments.merges_due([200, 30, 10, 10]) == 3  # 10 < 3 x 10; then 30 < 3 x 20; 200 >= 3 x 50
    assert store_segments.merges_due([100, 40, 10, 10]) == 4  # 40 < 3 x 20; then 100 < 3 x 60


def test_other_writers_keep_one_run_order(tmp_path):
    """An ingest (no segments) still writes each table in one run order, recorded without segments;
    a receiver write onto it reads its parts as one segment."""
    ids = _trace_ids(6, seed=13)
    spans = [s for i, t in enumerate(ids[:5]) for s in _trace(i, t)]
    root = tmp_path / "store"
    ingest("otlp", write_json(tmp_path / "a.json", spans), root, corpus="live")
    assert "segments" not in read_manifest(root)["sources"]["live"]
    _write(_receiver(root, []), genai_trace(ids[5]))
    layout = read_manifest(root)["sources"]["live"]["segments"]
    assert sum(layout["runs"]) == 6 and all(n > 0 for n in layout["runs"])
    assert {f.rsplit("/", 1)[1].split("-")[1][0] for f in table_files(root, "runs")} == {"g"}
