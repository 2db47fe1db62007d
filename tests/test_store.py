"""The store: atomic per-source writes, invariants, idempotent replacement."""
from __future__ import annotations

import json

import pytest

import queries
from auditatlas import store, store_lock
from auditatlas.errors import StoreError


def _run(corpus: str, n: int, native: str = "r1", outcome: str = "failure") -> dict:
    run_id = f"{corpus}:{native}"
    return {
        "runs": [{"run_id": run_id, "corpus": corpus, "outcome": outcome, "n_steps": n, "backbone": "B"}],
        "steps": [{"run_id": run_id, "corpus": corpus, "step_idx": i, "action": "A", "label": int(i == 0)} for i in range(n)],
        "edges": [{"run_id": run_id, "corpus": corpus, "src_idx": i, "dst_idx": i + 1, "kind": "handoff", "provenance": "inferred"} for i in range(n - 1)],
    }


def _counts(root) -> dict:
    con = queries.connect(root)
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "steps", "edges")}


def test_write_and_read_back(tmp_path):
    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    assert _counts(tmp_path) == {"runs": 1, "steps": 3, "edges": 2}
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert manifest["sources"]["alpha"]["rows"]["steps"] == 3


def test_rewriting_a_source_replaces_it(tmp_path):
    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    assert _counts(tmp_path) == {"runs": 1, "steps": 3, "edges": 2}
    store.write_source(tmp_path, "alpha", _run("alpha", 5))
    assert _counts(tmp_path) == {"runs": 1, "steps": 5, "edges": 4}
    # Replaced folders are retired (a reader may still use them), not deleted at once...
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert len(manifest["retired"]) == 2
    assert len(list((tmp_path / "sources").iterdir())) == 3
    # ...and a later write past the grace period removes them: one folder per source again.
    store_lock.RETIRE_GRACE_S, grace = 0.0, store_lock.RETIRE_GRACE_S
    try:
        store.write_source(tmp_path, "beta", _run("beta", 1))
    finally:
        store_lock.RETIRE_GRACE_S = grace
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "sources").iterdir()) == ["alpha", "beta"]
    assert json.loads((tmp_path / "MANIFEST.json").read_text())["retired"] == []


def test_sources_are_independent(tmp_path):
    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    store.write_source(tmp_path, "beta", _run("beta", 2))
    assert _counts(tmp_path)["steps"] == 5
    assert store.remove_source(tmp_path, "beta")
    assert _counts(tmp_path)["steps"] == 3


@pytest.mark.parametrize(
    "mutate, invariant",
    [
        (lambda t: t["steps"].pop(1), "dense"),
        # As many steps as the run says, but one index twice and one missing; all shifted by one.
        (lambda t: t["steps"][2].update(step_idx=1), "a step_idx appears once in its run"),
        (lambda t: [s.update(step_idx=s["step_idx"] + 1) for s in t["steps"]], "dense"),
        (lambda t: t["edges"].append({"run_id": "alpha:r1", "corpus": "alpha", "src_idx": 2, "dst_idx": 1}), "backwards"),
        (lambda t: t["steps"].append({"run_id": "alpha:zz", "corpus": "alpha", "step_idx": 0}), "belongs to a run"),
        (lambda t: t["steps"][0].update(label=2), "labels"),
        (lambda t: t["runs"][0].update(outcome="won"), "outcomes"),
        # Two broken: the first in the checks' order is the one named.
        (lambda t: (t["runs"][0].update(outcome="won"), t["steps"][0].update(label=2)), "labels are 0, 1 or null"),
        # A source without one of the tables a check joins (its runs, a prediction's set): the
        # check still runs on the table that has rows.
        (lambda t: t.pop("runs"), "belongs to a run"),
        (lambda t: t.update(predictions=[{"set_id": "s", "run_id": "alpha:r1", "step_idx": 0, "score": 0.5}]),
         "belongs to a prediction set"),
    ],
)
@pytest.mark.parametrize("database", ["kept", "own"])
def test_broken_invariant_leaves_store_unchanged(tmp_path, monkeypatch, mutate, invariant, database):
    """On the kept checking database (a small source) and on a database of the write's own (a
    source over ``KEPT_MAX_BYTES``) alike."""
    from auditatlas import validate

    if database == "own":
        monkeypatch.setattr(validate, "KEPT_MAX_BYTES", -1)
    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    before = (tmp_path / "MANIFEST.json").read_bytes()
    tables = _run("alpha", 3)
    mutate(tables)
    with pytest.raises(StoreError, match=invariant):
        store.write_source(tmp_path, "alpha", tables)
    assert (tmp_path / "MANIFEST.json").read_bytes() == before
    assert _counts(tmp_path) == {"runs": 1, "steps": 3, "edges": 2}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging")]


def test_a_write_runs_only_the_checks_its_rows_can_break(tmp_path, monkeypatch):
    """A check with no row in the table it is about (a source of prediction sets has no steps to
    be dense, no runs to be unique) has nothing to offend and is not run; a write of runs alone
    runs the run checks, which find its runs' missing steps."""
    from auditatlas import validate

    ran, real_checks = [], validate._run_checks

    def checks(con, source, **how):
        ran.append({validate._CHECKS[i][0] for i in how["checks"]})
        real_checks(con, source, **how)

    monkeypatch.setattr(validate, "_run_checks", checks)
    sets = {"prediction_sets": [{"set_id": "s", "corpus": "alpha", "granularity": "step", "source_file": "x"}],
            "predictions": [{"set_id": "s", "run_id": "alpha:r1", "step_idx": 0, "score": 0.5}]}
    store.write_source(tmp_path, "sets", sets)
    assert ran == [{"prediction set ids are unique", "every prediction belongs to a prediction set of this source",
                    "a prediction is keyed to exactly one step, run or config"}]
    with pytest.raises(StoreError, match="dense"):
        store.write_source(tmp_path, "alpha", {"runs": _run("alpha", 3)["runs"]})
    assert "step_idx is dense 0..n_steps-1 in every run" in ran[-1] and "step labels are 0, 1 or null" not in ran[-1]


def test_unknown_column_is_refused(tmp_path):
    tables = _run("alpha", 1)
    tables["runs"][0]["colour"] = "red"
    # list-of-dict rows only pick schema columns; a DataFrame with a stray column is refused
    import pandas as pd

    with pytest.raises(StoreError, match="outside the schema"):
        store.write_source(tmp_path, "alpha", {**tables, "runs": pd.DataFrame(tables["runs"])})


def test_empty_store_has_typed_empty_views(tmp_path):
    con = queries.connect(tmp_path)
    assert con.execute("SELECT count(*) FROM steps").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM predictions").fetchone()[0] == 0


def test_views_follow_a_new_ingest_without_restart(tmp_path):
    assert _counts(tmp_path)["runs"] == 0
    store.write_source(tmp_path, "alpha", _run("alpha", 2))
    assert _counts(tmp_path)["runs"] == 1


def test_bad_source_name(tmp_path):
    with pytest.raises(StoreError, match="source name"):
        store.write_source(tmp_path, "../evil", _run("alpha", 1))


def test_the_kept_checking_database_is_replaced_after_its_uses(tmp_path, monkeypatch):
    """A long-lived writer (the receiver) checks every write on the kept database, which keeps
    native memory per Parquet file read: it is replaced after KEPT_MAX_USES checks, and a
    cursor still open on the replaced one keeps working."""
    from auditatlas import duck, validate

    monkeypatch.setattr(duck, "KEPT_MAX_USES", 3)
    monkeypatch.setattr(duck, "_kept", None)
    monkeypatch.setattr(duck, "_kept_uses", 0)
    first = duck.kept_cursor()
    first.execute("CREATE TABLE marker AS SELECT 1 AS x")  # in the database, seen by its every cursor
    seen, real_checks = [], validate._run_checks

    def checks(con, source, **how):
        seen.append(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'marker'").fetchone()[0])
        real_checks(con, source, **how)

    monkeypatch.setattr(validate, "_run_checks", checks)
    for _ in range(4):
        store.write_source(tmp_path, "alpha", _run("alpha", 2))
    assert seen == [1, 1, 0, 0]  # two more checks on the first database, then a new one
    assert first.execute("SELECT x FROM marker").fetchall() == [(1,)]
    first.close()


@pytest.mark.parametrize("kept_max_bytes", [None, -1])
def test_invariant_checks_spill_inside_the_store_and_clean_up(tmp_path, monkeypatch, kept_max_bytes):
    """The staged checks run under a memory limit. A source over ``KEPT_MAX_BYTES`` may spill:
    into a scratch folder of the store (which recovery removes if the writer dies), gone after
    the write, failed or not. A smaller one is checked on the kept database, which never spills."""
    from auditatlas import validate

    if kept_max_bytes is not None:
        monkeypatch.setattr(validate, "KEPT_MAX_BYTES", kept_max_bytes)
    made, settings = [], []
    real, real_checks = store.scratch_dir, validate._run_checks

    def recording(root, purpose):
        folder = real(root, purpose)
        made.append(folder)
        return folder

    def checks(con, source, **how):
        settings.append(con.execute("SELECT current_setting('temp_directory'), current_setting('memory_limit')").fetchone())
        real_checks(con, source, **how)

    monkeypatch.setattr(store, "scratch_dir", recording)
    monkeypatch.setattr(validate, "_run_checks", checks)
    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    assert [f.parent for f in made] == [tmp_path] and made[0].name.startswith(store.TMP_PREFIX + "check-")
    assert not made[0].exists()
    spill, limit = settings[0]
    assert spill == ("" if kept_max_bytes is None else str(made[0]))
    assert limit.startswith("244.1 MiB")  # 256 MB, as DuckDB spells it
    bad = _run("beta", 2)
    bad["steps"].append(dict(bad["steps"][0]))  # a duplicate step breaks an invariant
    with pytest.raises(StoreError):
        store.write_source(tmp_path, "beta", bad)
    assert len(made) == 2 and not made[1].exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(store.TMP_PREFIX)]


def test_a_large_sources_checks_run_one_at_a_time_within_the_memory_limit(tmp_path, monkeypatch):
    """DuckDB runs the branches of one statement at once: the fifteen checks as one statement did
    not fit the checks' memory limit at a million rooms ("failed to pin block"), where each check
    alone spills. Scaled down: 300 simulated rooms checked on a database of their own under 32 MB
    fail as one statement and pass one check at a time."""
    from auditatlas import validate
    from auditatlas.ingest import ingest
    from auditatlas.simulator import simulate

    simulate(tmp_path / "rooms", rooms=300, seed=0)
    monkeypatch.setattr(validate, "KEPT_MAX_BYTES", -1)  # checked as a large source is
    monkeypatch.setattr(validate, "MEMORY_LIMIT", "32MB")
    ingest("maadbench", tmp_path / "rooms", tmp_path / "store")
    assert _counts(tmp_path / "store")["runs"] == 300


def test_checks_that_cannot_run_stop_the_write_in_one_sentence(tmp_path, monkeypatch):
    """A check DuckDB cannot run (here out of a 1 MB limit) is one sentence naming the source and,
    on a source checked one check at a time, the check; the store is left as it was: not a
    traceback from inside the writer."""
    from auditatlas import validate

    store.write_source(tmp_path, "alpha", _run("alpha", 3))
    before = (tmp_path / "MANIFEST.json").read_bytes()
    monkeypatch.setattr(validate, "KEPT_MAX_BYTES", -1)
    monkeypatch.setattr(validate, "MEMORY_LIMIT", "1MB")
    with pytest.raises(StoreError, match=r"^source 'beta' could not be checked \(the check 'run ids are unique': "
                                         r".*Out of Memory.*\); nothing was written\.$"):
        store.write_source(tmp_path, "beta", _run("beta", 3))
    assert (tmp_path / "MANIFEST.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(store.TMP_PREFIX)]
