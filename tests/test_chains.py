"""The chain rule, applied once by the store writer: each step's chain_role and chain_length,
each run's chain_length, held by two invariants, and what the manifest records about a source's
corpora. Expected values are worked out by hand, or from the spec's words written out in pandas
(never from auditatlas.chains)."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditatlas import store
from auditatlas.errors import StoreError
from auditatlas.schema import TABLES, empty_table
from auditatlas.validate import check_invariants

# One run, worked out by hand (step: scope, label):
#   0 P1 1, 1 P1 None, 2 P2 1, 3 P1 0, 4 P1 1, 5 P1 1   -> P1 chain 0, 4, 5 (the unlabeled and
#                                                          normal steps do not break it)
#   P2: step 2 alone -> no chain
#   6 None 1, 7 None 1                                   -> the run's own scope: chain 6, 7
#   8 "" 1                                               -> an empty scope is not the run's
STEPS = [("P1", 1), ("P1", None), ("P2", 1), ("P1", 0), ("P1", 1), ("P1", 1), (None, 1), (None, 1), ("", 1)]
ROLES = ["origin", None, None, None, "mid", "down", "origin", "down", None]
LENGTHS = [3, 3, 0, 3, 3, 3, 2, 2, 0]


def _tables(run_id: str = "k:r", corpus: str = "k") -> dict:
    return {
        "runs": [{"run_id": run_id, "corpus": corpus, "outcome": "failure", "n_steps": len(STEPS)}],
        "steps": [{"run_id": run_id, "corpus": corpus, "step_idx": i, "scope": scope, "label": label,
                   # an adapter's own values are overwritten by the writer
                   "chain_role": "down", "chain_length": 99}
                  for i, (scope, label) in enumerate(STEPS)],
    }


def test_the_writer_stores_each_steps_role_and_chain_length(tmp_path):
    store.write_source(tmp_path, "k", _tables())
    steps = pq.read_table(store.table_files(tmp_path, "steps")).to_pylist()
    assert [s["chain_role"] for s in steps] == ROLES
    assert [s["chain_length"] for s in steps] == LENGTHS
    runs = pq.read_table(store.table_files(tmp_path, "runs")).to_pylist()
    assert [(r["anomalous_steps"], r["chain_length"]) for r in runs] == [(7, 3)]


def test_the_explorer_reads_the_stored_roles(tmp_path):
    import queries
    from auditatlas import graph as tg

    store.write_source(tmp_path, "k", _tables())
    steps = queries.run("explorer_steps", {"run": "k:r"}, root=tmp_path)
    g = tg.build(steps, [], "k:r")
    assert [g.nodes[i]["role"] for i in range(len(STEPS))] == ROLES
    assert tg.chain_length(g) == 3
    run = queries.run("explorer_run", {"run": "k:r"}, root=tmp_path).iloc[0]
    assert (run["anomalous_steps"], run["chain_length"], run["labeled_steps"], run["n_scopes"]) == (7, 3, 8, 4)


def _prepared() -> dict[str, pa.Table]:
    return store.prepare({name: _tables().get(name, empty_table(name)) for name in TABLES})


def _with(table: pa.Table, column: str, values: list) -> pa.Table:
    field = table.schema.field(column)
    return table.set_column(table.schema.get_field_index(column), field, pa.array(values, field.type))


def test_a_step_whose_role_disagrees_with_its_labels_is_refused():
    tables = _prepared()
    check_invariants(tables, "k")  # as written: holds
    steps = tables["steps"]
    # a role on an unlabeled step, a role on a failure alone in its scope, no role on a chain's step
    for role in (ROLES[:1] + ["origin"] + ROLES[2:], ROLES[:-1] + ["down"], ROLES[:4] + [None] + ROLES[5:]):
        with pytest.raises(StoreError, match="chain role sits on a failed step of a chain"):
            check_invariants({**tables, "steps": _with(steps, "chain_role", role)}, "k")
    with pytest.raises(StoreError, match="chain role sits on a failed step of a chain"):
        check_invariants({**tables, "steps": _with(steps, "chain_length", [1] + LENGTHS[1:])}, "k")


def test_a_run_whose_chain_length_disagrees_with_its_steps_is_refused():
    tables = _prepared()
    with pytest.raises(StoreError, match="chain_length is its longest chain"):
        check_invariants({**tables, "runs": _with(tables["runs"], "chain_length", [2])}, "k")


def _random_runs(n_runs: int, seed: int) -> list[dict]:
    """Runs of random scopes (some missing) and labels (some unlabeled), batch by batch."""
    import random

    rng = random.Random(seed)
    batches = []
    for b in range(3):
        runs, steps = [], []
        for r in range(n_runs):
            run_id = f"x:{b}-{r:04d}"
            n = rng.randint(0, 25)
            runs.append({"run_id": run_id, "corpus": "x", "outcome": "failure", "n_steps": n})
            steps += [{"run_id": run_id, "corpus": "x", "step_idx": i, "scope": rng.choice(["P1", "P2", "P3", None]),
                       "label": rng.choice([1, 1, 0, None])} for i in range(n)]
        batches.append({"runs": runs, "steps": steps})
    return batches[::-1]  # out of run order: the commit merges the parts


def test_stored_columns_follow_the_spec_on_random_runs(tmp_path):
    """The spec's words in pandas: failed steps (label 1) of one (run, scope), a missing scope
    being the run's own, sorted; two or more make a chain: first origin, last down, rest mid."""
    import queries

    with store.SourceWriter(tmp_path, "x") as writer:
        for batch in _random_runs(200, seed=7):
            writer.append(batch)
        writer.commit()
    steps = queries.connect(tmp_path).execute(
        "SELECT run_id, scope, step_idx, label, chain_role, chain_length FROM steps").df()
    expected_role, expected_length = {}, {}
    for (run_id, _), scope in steps.groupby(["run_id", "scope"], dropna=False):
        failed = sorted(int(i) for i, label in zip(scope.step_idx, scope.label) if pd.notna(label) and label == 1)
        n = len(failed) if len(failed) >= 2 else 0
        for i in scope.step_idx:
            expected_length[(run_id, int(i))] = n
        if n:
            for pos, i in enumerate(failed):
                expected_role[(run_id, i)] = "origin" if pos == 0 else "down" if pos == n - 1 else "mid"
    got_role = {(r, int(i)): v for r, i, v in zip(steps.run_id, steps.step_idx, steps.chain_role) if pd.notna(v)}
    got_length = {(r, int(i)): int(v) for r, i, v in zip(steps.run_id, steps.step_idx, steps.chain_length)}
    assert len(expected_role) > 500 and "mid" in expected_role.values()
    assert got_role == expected_role
    assert got_length == expected_length
    runs = queries.connect(tmp_path).execute("SELECT run_id, chain_length FROM runs").df()
    longest = {run_id: 0 for run_id in runs.run_id}
    for (run_id, _), n in expected_length.items():
        longest[run_id] = max(longest[run_id], n)
    assert dict(zip(runs.run_id, runs.chain_length)) == longest


# --- the corpora a source holds ------------------------------------------------------------------


def test_the_manifest_records_the_corpora_of_a_sources_runs(tmp_path):
    two = {"runs": [{"run_id": "a:1", "corpus": "a", "outcome": "success", "n_steps": 0},
                    {"run_id": "b:1", "corpus": "b", "outcome": "success", "n_steps": 0}],
           "prediction_sets": [{"set_id": "s", "corpus": "c", "granularity": "run"}]}
    store.write_source(tmp_path, "two", two)
    store.write_source(tmp_path, "sets", {"prediction_sets": [{"set_id": "t", "corpus": "a", "granularity": "run"}]})
    assert store.read_manifest(tmp_path)["sources"]["two"]["run_corpora"] == ["a", "b"]
    assert store.source_corpora(tmp_path) == {"sets": [], "two": ["a", "b"]}


def test_a_source_entry_without_the_record_is_read_from_its_runs(tmp_path):
    store.write_source(tmp_path, "two", {"runs": [
        {"run_id": "b:1", "corpus": "b", "outcome": "success", "n_steps": 0},
        {"run_id": "a:1", "corpus": "a", "outcome": "success", "n_steps": 0}]})
    manifest = json.loads((tmp_path / store.MANIFEST).read_text())
    del manifest["sources"]["two"]["run_corpora"]
    (tmp_path / store.MANIFEST).write_text(json.dumps(manifest))
    assert store.source_corpora(tmp_path) == {"two": ["a", "b"]}


def test_a_store_of_the_previous_format_is_refused_with_rebuild(tmp_path):
    store.write_source(tmp_path, "k", _tables())
    manifest = json.loads((tmp_path / store.MANIFEST).read_text())
    (tmp_path / store.MANIFEST).write_text(json.dumps({**manifest, "format": 3}))
    with pytest.raises(StoreError, match="written in format 3 by an older Audit Atlas.*Rebuild it"):
        store.read_manifest(tmp_path)
