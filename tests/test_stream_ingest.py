"""Streaming and parallel ingest, and the store layout it writes (issue: Scale).

The reference each time is the single-batch path that landed first (read the whole release,
write it in one batch); the streaming path must give the same rows in the same order.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import queries
from auditatlas import simulator, store, store_parts
from auditatlas.errors import IngestFailed
from auditatlas.ingest import Context, ingest, maadbench, simulated
from auditatlas.ingest.stream import run_plan
from conftest import TAUBENCH, WHOWHEN

ROOMS = 400


@pytest.fixture(scope="module")
def room_files() -> Path:
    """ROOMS simulated rooms of seed 5 as files, simulated once for the session (read only)."""
    from stores import shared_store

    return shared_store("rooms-400-s5")


@pytest.fixture(scope="module")
def single_batch(room_files, tmp_path_factory) -> Path:
    """The reference: the whole folder read in one batch and written in one part."""
    root = tmp_path_factory.mktemp("single")
    batch = maadbench.read(room_files, Context(store=root), corpus=simulator.CORPUS, kind=simulator.KIND, source="demo")
    store.write_source(root, "demo", batch.tables)
    return root


def _rows(root: Path, table: str):
    return queries.connect(root).execute(f"SELECT * FROM {table}").df()


def _same_tables(a: Path, b: Path) -> None:
    for table in ("corpora", "runs", "steps", "edges"):
        left, right = _rows(a, table), _rows(b, table)
        assert len(left) > 0 or table == "corpora"
        assert left.equals(right), f"table {table} differs"


def test_streamed_files_equal_the_single_batch(room_files, single_batch, tmp_path):
    plan = maadbench.plan(room_files, None, corpus=simulator.CORPUS, kind=simulator.KIND, source="demo", chunk_files=70)
    assert len(plan.chunks) == 6  # 400 files in chunks of 70: really streamed
    run_plan(plan, tmp_path, workers=0)
    _same_tables(single_batch, tmp_path)


def test_simulated_rooms_in_memory_equal_the_files(single_batch, tmp_path):
    """Rooms handed over as documents, out of run order, merged by folder at commit."""
    run_plan(simulated.plan(ROOMS, 5, chunk_rooms=90), tmp_path, workers=0)
    _same_tables(single_batch, tmp_path)


def test_a_local_dask_cluster_gives_the_same_store(single_batch, tmp_path, local_cluster):
    run_plan(simulated.plan(ROOMS, 5, chunk_rooms=90), tmp_path, client=local_cluster)
    _same_tables(single_batch, tmp_path)


def test_a_bad_file_in_the_last_chunk_lands_nothing(room_files, tmp_path):
    folder = tmp_path / "rooms"
    shutil.copytree(room_files, folder)
    last = sorted(folder.rglob("*.json"), key=lambda p: p.relative_to(folder).as_posix())[-1]
    doc = json.loads(last.read_text())
    doc["trace"][0]["call_statistic"]["input_tokens"] = "many"
    last.write_text(json.dumps(doc))
    root = tmp_path / "store"
    store.write_source(root, "keep", {"runs": [{"run_id": "k:1", "corpus": "k", "outcome": "success", "n_steps": 0}]})
    manifest_before = (root / store.MANIFEST).read_bytes()
    with pytest.raises(IngestFailed) as failed:
        ingest("maadbench", folder, root, workers=0)
    assert len(failed.value.problems) == 1
    problem = failed.value.problems[0]
    assert problem.file == last.relative_to(folder).as_posix()
    assert problem.field == "trace[0].call_statistic.input_tokens"
    assert (root / store.MANIFEST).read_bytes() == manifest_before
    assert not [p for p in root.iterdir() if p.name.startswith(".staging-")]


def test_layout_one_run_is_one_or_two_row_groups(tmp_path, monkeypatch):
    """Sorted by run, small row groups, the sort in the Parquet metadata, parts in run order.

    Row groups of 512 steps (8,192 in the product) give each part many groups from 400 rooms,
    as 3,000 rooms do at the product's size."""
    monkeypatch.setitem(store_parts.ROW_GROUP_ROWS, "steps", 512)
    run_plan(simulated.plan(400, 2, chunk_rooms=100), tmp_path, workers=0)
    parts = store.table_files(tmp_path, "steps")
    previous_last = None
    groups_of_run: dict[str, set] = {}
    for part in parts:
        meta = pq.ParquetFile(part).metadata
        assert meta.metadata[b"auditatlas.sorted_by"] == b"run_id,step_idx"
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            assert rg.num_rows <= store.ROW_GROUP_ROWS["steps"]
            assert [c.column_index for c in rg.sorting_columns] == [pq.read_schema(part).get_field_index("run_id"),
                                                                    pq.read_schema(part).get_field_index("step_idx")]
            stats = rg.column(pq.read_schema(part).get_field_index("run_id")).statistics
            if previous_last is not None:
                assert stats.min >= previous_last, "row groups overlap: the table is not in run order"
            previous_last = stats.max
        table = pq.read_table(part, columns=["run_id"])
        offset = 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            for run_id in set(table.column("run_id").slice(offset, n).to_pylist()):
                groups_of_run.setdefault(run_id, set()).add((part, g))
            offset += n
    assert len(groups_of_run) == 400
    assert sum(pq.ParquetFile(p).metadata.num_row_groups for p in parts) >= 6  # runs do cross group edges
    assert max(len(g) for g in groups_of_run.values()) <= 2
    # The slice keys sit on every step and agree with the step's run.
    con = queries.connect(tmp_path)
    mismatched = con.execute("""
        SELECT count(*) FROM steps s JOIN runs r USING (run_id)
        WHERE s.backbone IS DISTINCT FROM r.backbone OR s.difficulty IS DISTINCT FROM r.difficulty
           OR s.temperature IS DISTINCT FROM r.temperature OR s.domain IS DISTINCT FROM r.domain
           OR s.outcome IS DISTINCT FROM r.outcome""").fetchone()[0]
    assert mismatched == 0
    assert con.execute("SELECT count(*) FROM steps WHERE backbone IS NULL").fetchone()[0] == 0


# The view as it stood before ranks were resolved at ingest (an OR join recomputed per query),
# kept here as the reference the materialised table must equal.
OLD_VIEW = """
WITH resolved AS (
    SELECT k.set_id, r.run_id, s.step_idx,
           CASE WHEN k.top IS NOT NULL AND s.step_idx = k.top THEN r.n_steps + 1
                WHEN list_position(k.ranking, s.step_idx) IS NOT NULL
                    THEN r.n_steps - (list_position(k.ranking, s.step_idx) - 1)
                ELSE 0 END::DOUBLE AS score
    FROM rankings k JOIN runs r ON k.run_key = r.run_key OR k.run_key = r.legacy_key
    JOIN steps s ON s.run_id = r.run_id
)
SELECT set_id, run_id, step_idx, score,
       row_number() OVER (PARTITION BY set_id, run_id ORDER BY score DESC NULLS LAST, step_idx) AS rank
FROM resolved
"""


@pytest.mark.skipif(not WHOWHEN.exists(), reason="needs ../shared/data/whowhen")
def test_resolved_judge_predictions_equal_the_old_view(tmp_path):
    ingest("whowhen", WHOWHEN, tmp_path)
    ingest("catchbench", None, tmp_path)
    con = queries.connect(tmp_path)
    old = con.execute(f"SELECT * FROM ({OLD_VIEW}) ORDER BY ALL").df()
    new = con.execute("""SELECT p.set_id, p.run_id, p.step_idx, p.score, p.rank FROM predictions p
                         JOIN rankings k USING (set_id) GROUP BY ALL ORDER BY ALL""").df()
    assert con.execute("SELECT count(DISTINCT set_id) FROM rankings").fetchone()[0] == 43
    assert len(old) == 43 * 1099
    assert new.equals(old)


@pytest.mark.skipif(not TAUBENCH.exists(), reason="needs ../shared/data/tau-bench")
def test_one_batch_adapters_still_land_whole(tmp_path):
    """tau-bench is read in one pass (100 runs); it lands through the same writer, sorted."""
    ingest("taubench", TAUBENCH, tmp_path)
    con = queries.connect(tmp_path)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 100
    ids = [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()]
    assert ids == sorted(ids)


def test_out_of_order_chunks_are_merged_one_bucket_at_a_time(tmp_path, monkeypatch):
    """Rooms come out of run order; the commit merges them run folder by run folder, writing a
    part whenever enough rows are pending, never the whole table at once (which once took 16 GB
    at a million rooms)."""
    seen: list[int] = []
    real_write = store_parts.write_part

    def spy(folder, table, label, data):
        if table == "steps" and str(label).startswith("s"):
            seen.append(data.num_rows)
        return real_write(folder, table, label, data)

    monkeypatch.setattr(store_parts, "MERGED_PART_ROWS", 600)
    monkeypatch.setattr(store_parts, "write_part", spy)
    outcome = run_plan(simulated.plan(400, 4, chunk_rooms=100), tmp_path, workers=0)
    steps = outcome.counters["steps"]
    assert sum(seen) == steps
    assert len(seen) >= steps // 1_200  # many merged parts, each about one or a few run folders
    assert max(seen) < steps / 2


def test_a_merged_part_that_fails_to_write_on_its_thread_fails_the_write_and_keeps_the_store(tmp_path, monkeypatch):
    """Merged parts are written on a thread while the merge reads on: a part that cannot be
    written must stop the commit as a write on the main thread would, leaving the store as it
    was (here: the source written before, untouched)."""
    run_plan(simulated.plan(200, 4, chunk_rooms=100), tmp_path, workers=0)
    before = store.read_manifest(tmp_path)
    real_write = store_parts.write_part
    written: list[str] = []

    def failing(folder, table, label, data):
        if table == "steps" and str(label).startswith("s") and written:
            raise OSError("No space left on device")
        written.append(str(label))
        return real_write(folder, table, label, data)

    monkeypatch.setattr(store_parts, "MERGED_PART_ROWS", 600)
    monkeypatch.setattr(store_parts, "write_part", failing)
    with pytest.raises(OSError, match="No space left"):
        run_plan(simulated.plan(400, 4, chunk_rooms=100), tmp_path, workers=0)
    assert store.read_manifest(tmp_path) == before
    assert sorted(p.name for p in (tmp_path / "sources").iterdir()) == [before["sources"]["demo"]["dir"].split("/")[1]]


def test_a_merge_parses_each_part_footer_once_and_past_its_budget_lands_the_same(tmp_path, monkeypatch):
    """Every bucket's read opens every part again; within FOOTER_BYTES a part's footer is parsed
    once for the table's merge (at a million rooms, 13,000 parses of 400 KB footers cost more
    than the reads). Past the budget each read parses it again, and the store is the same."""
    real = pq.ParquetFile
    parsed: list[str] = []

    def counting(path, *args, metadata=None, **kwargs):
        if metadata is None and "part-b~" in str(path) and "/steps/" in str(path):
            parsed.append(str(path))
        return real(path, *args, metadata=metadata, **kwargs)

    monkeypatch.setattr(store_parts, "MERGED_PART_ROWS", 600)  # several reads of every part
    monkeypatch.setattr(store_parts.pq, "ParquetFile", counting)
    run_plan(simulated.plan(400, 4, chunk_rooms=100), tmp_path / "kept", workers=0)
    assert len(parsed) == 4 and len(set(parsed)) == 4  # four chunks' parts, each parsed once
    parsed.clear()
    monkeypatch.setattr(store_parts, "FOOTER_BYTES", 0)
    run_plan(simulated.plan(400, 4, chunk_rooms=100), tmp_path / "parsed", workers=0)
    assert len(parsed) > 4 * 2  # each read parsed its part's footer again
    for name in ("runs", "steps", "edges"):
        kept = [pq.read_table(f) for f in store.table_files(tmp_path / "kept", name)]
        again = [pq.read_table(f) for f in store.table_files(tmp_path / "parsed", name)]
        assert [t.num_rows for t in kept] == [t.num_rows for t in again], name
        assert len(kept) >= (1 if name == "runs" else 2), name  # steps and edges merged into several parts
        assert all(a.equals(b) for a, b in zip(kept, again)), name


def test_in_order_agrees_with_arrows_sort_on_keys_with_ties_and_nulls():
    """The merge skips a bucket's sort when its rows are in order already; "in order" must be
    exactly what Arrow's sort_by (nulls last) leaves unchanged, ties and nulls included."""
    import random

    import pyarrow as pa

    rng = random.Random(7)
    checked = {True: 0, False: 0}
    for _ in range(400):
        n = rng.randint(0, 9)
        rows = [{"run_id": rng.choice(["a", "b", "c", None]), "step_idx": rng.choice([0, 1, 2, None])}
                for _ in range(n)]
        if rng.random() < 0.5:  # many tables sorted, so both answers are exercised
            rows.sort(key=lambda r: tuple((v is None, v if v is not None else 0) for v in r.values()))
        table = pa.Table.from_pylist(rows, schema=pa.schema([("run_id", pa.string()), ("step_idx", pa.int64())]))
        expected = table.equals(table.sort_by([("run_id", "ascending"), ("step_idx", "ascending")]))
        assert store_parts.in_order(table, ("run_id", "step_idx")) == expected, rows
        checked[expected] += 1
    assert min(checked.values()) > 50
    two_chunks = pa.Table.from_pylist([{"run_id": "b", "step_idx": 0}] * 2).combine_chunks()
    assert not store_parts.in_order(pa.concat_tables([two_chunks, pa.Table.from_pylist([{"run_id": "a", "step_idx": 1}])]),
                                    ("run_id", "step_idx"))


def test_batches_out_of_run_order_are_sorted_by_duckdb_in_bounded_memory(tmp_path):
    """A re-scoring appends its sets one batch after another, so predictions arrive set by set,
    not in run order. The commit sorts them with DuckDB's external sort (nulls last, as Arrow's
    sort_by does) and reads them back a row group at a time, never as one Arrow table (27.6M
    predictions over a million runs overflowed one Arrow string array)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = [f"c:r{i:03d}" for i in range(120)]
    sets = ["c:z-set", "c:a-set", "c:m-set"]  # appended in this order, not sorted
    batches = []
    for k, set_id in enumerate(sets):
        rows = [{"set_id": set_id, "corpus": "c", "run_id": run, "step_idx": step, "score": float((i * 7 + step + k) % 11)}
                for i, run in enumerate(runs) for step in (2, 0, 1)]
        rows.append({"set_id": set_id, "corpus": "c", "run_id": runs[0], "step_idx": None, "score": 0.5})  # run-level
        batches.append(({"set_id": set_id, "corpus": "c", "method": "m", "granularity": "step"}, rows))
    with store.SourceWriter(tmp_path, "rescore-test") as writer:
        for set_row, rows in batches:
            writer.append({"prediction_sets": [set_row], "predictions": rows})
        writer.commit({})
    files = store.table_files(tmp_path, "predictions")
    stored = pa.concat_tables([pq.read_table(f) for f in files])
    keys = [(k, "ascending") for k in ("run_id", "set_id", "step_idx", "config_id", "capability")]
    expected = stored.sort_by(keys)  # Arrow's own order (nulls at the end) as the reference
    assert stored.num_rows == 3 * (120 * 3 + 1)
    assert stored.select(["run_id", "set_id", "step_idx", "score", "rank"]).equals(
        expected.select(["run_id", "set_id", "step_idx", "score", "rank"]))
    first = stored.slice(0, 4).select(["set_id", "step_idx"]).to_pylist()
    assert first == [{"set_id": "c:a-set", "step_idx": 0}, {"set_id": "c:a-set", "step_idx": 1},
                     {"set_id": "c:a-set", "step_idx": 2}, {"set_id": "c:a-set", "step_idx": None}]
    assert not list(tmp_path.rglob(".tmp-sort-*"))  # the sort's scratch is gone


def test_rows_become_arrow_every_few_runs_without_changing_them(room_files, tmp_path, monkeypatch):
    """A chunk's rows are turned into Arrow columns every FLUSH_RUNS runs (bounded memory); the
    tables and counters must equal the all-at-once conversion, and a bad file after a flush
    still rolls back only its own rows (the chunk then reports it and carries no tables)."""
    files = sorted((str(f), rel) for f, rel in maadbench.TRACES.files(room_files))[:60]
    whole = maadbench.convert_files(files, simulator.CORPUS)
    monkeypatch.setattr(maadbench, "FLUSH_RUNS", 7)
    flushed = maadbench.convert_files(files, simulator.CORPUS)
    assert whole.counters == flushed.counters and whole.counters["runs"] == 60
    for name in ("runs", "steps", "edges"):
        assert flushed.tables[name].equals(whole.tables[name]), name

    bad = tmp_path / "bad.json"
    doc = json.loads(Path(files[0][0]).read_text())
    doc["trace"][-1]["call_statistic"]["input_tokens"] = -3
    bad.write_text(json.dumps(doc))
    out, problems = maadbench._Output(), []
    for file, rel in files[:20] + [(str(bad), "bad.json")] + files[20:30]:
        maadbench.TRACES.read_file(file, rel, simulator.CORPUS, out, problems)
    assert [p.field for p in problems] == [f"trace[{len(doc['trace']) - 1}].call_statistic.input_tokens"]
    assert len(out.runs) == 30 and len(out.steps) == sum(whole.tables["runs"].column("n_steps").to_pylist()[:30])


def test_progress_sentence_leaves_the_share_to_its_drawer():
    from auditatlas.ingest.stream import format_progress

    info = {"done": 40, "total": 100, "elapsed": 2.0, "steps": 1000, "units": "rooms", "problems": 0}
    assert format_progress(info) == "40/100 rooms, 1,000 steps, 500 steps/s, 3 s left"
