"""The run list (explorer_runs.sql over runs alone): each run's anomalous steps and chain
length are written onto `runs` by the store writer, so sorting and filtering on them is a
scan of runs. Checked on a small authored store whose counts are worked out by hand."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import queries
from auditatlas import store
from auditatlas.errors import StoreError
from auditatlas.schema import TABLES, empty_table
from auditatlas.validate import check_invariants

# run -> (backbone, labels per (scope, label)); chain length = most failures in one scope if >= 2.
RUNS = {
    "c:a": ("X", [("s1", 1), ("s1", 1), ("s1", 1), ("s2", 1), ("s2", 0)]),  # 4 anomalous, chain 3
    "c:b": ("Y", [("s1", 1), ("s2", 1), ("s2", 0)]),                        # 2 anomalous, no chain
    "c:c": ("X", [("s1", 0), ("s1", None)]),                                # none
    "c:d": ("Y", [("s1", 1), ("s1", 1), ("s2", 1), ("s2", 1), ("s2", 1)]),  # 5 anomalous, chain 3
    "c:e": ("X", [(None, 1), (None, 1), ("s1", 0)]),                        # unscoped failures: chain 2
    "c:f": ("Y", []),                                                       # no steps at all
}


def _tables():
    runs, steps = [], []
    for run_id, (backbone, labels) in RUNS.items():
        runs.append({"run_id": run_id, "corpus": "c", "backbone": backbone, "outcome": "failure",
                     "n_steps": len(labels)})
        steps += [{"run_id": run_id, "corpus": "c", "step_idx": i, "action": "A", "scope": scope, "label": label}
                  for i, (scope, label) in enumerate(labels)]
    return {"runs": runs, "steps": steps}


@pytest.fixture()
def root(tmp_path):
    store.write_source(tmp_path, "c", _tables())
    return tmp_path


def _params(**kw):
    return {"slice": {}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [], "f_difficulty": [],
            "f_outcome": [], "min_steps": None, "max_steps": None, "min_anomalous": None, "max_anomalous": None,
            "min_chain": None, "max_chain": None, "sort": "run", "descending": False, "limit": 50, "offset": 0, **kw}


def _page(root, **kw):
    return queries.run("explorer_runs", _params(**kw), root=root)


def test_the_writer_stores_each_runs_counts(root):
    runs = pq.read_table(store.table_files(root, "runs")).to_pylist()
    got = {r["run_id"]: (r["anomalous_steps"], r["chain_length"]) for r in runs}
    assert got == {"c:a": (4, 3), "c:b": (2, 0), "c:c": (0, 0), "c:d": (5, 3), "c:e": (2, 2), "c:f": (0, 0)}


def test_page_carries_each_runs_counts(root):
    page = _page(root)
    assert page[["run", "anomalous_steps", "chain_length"]].values.tolist() == [
        ["c:a", 4, 3], ["c:b", 2, 0], ["c:c", 0, 0], ["c:d", 5, 3], ["c:e", 2, 2], ["c:f", 0, 0]]


def test_sorted_on_counts_ties_by_run(root):
    assert _page(root, sort="chain_length", descending=True)["run"].tolist() == ["c:a", "c:d", "c:e", "c:b", "c:c", "c:f"]
    assert _page(root, sort="anomalous_steps")["run"].tolist() == ["c:c", "c:f", "c:b", "c:e", "c:a", "c:d"]


def test_filters_on_counts_and_the_count_agrees(root):
    page = _page(root, min_chain=2, max_anomalous=4)
    assert page["run"].tolist() == ["c:a", "c:e"]
    count_params = {k: v for k, v in _params(min_chain=2, max_anomalous=4).items()
                    if k not in ("sort", "descending", "limit", "offset")}
    assert int(queries.run("explorer_runs_count", count_params, root=root)["total"].iloc[0]) == 2


def test_page_order_offset_and_slice_are_kept(root):
    page = _page(root, sort="backbone", descending=True, limit=2, offset=1)
    # Backbone descending, ties by run ascending: b, d, f (Y), then a, c, e (X); offset 1, two rows.
    assert page["run"].tolist() == ["c:d", "c:f"]
    only_x = _page(root, slice={"backbone": ["X"]})
    assert only_x[["run", "anomalous_steps"]].values.tolist() == [["c:a", 4], ["c:c", 0], ["c:e", 2]]


def test_empty_page(root):
    page = _page(root, run_q="zzz", run_pattern="%zzz%")
    assert page.empty and {"anomalous_steps", "chain_length"} <= set(page.columns)


def test_a_run_whose_count_disagrees_with_its_steps_is_refused():
    tables = store.prepare({name: _tables().get(name, empty_table(name)) for name in TABLES})
    runs = tables["runs"]
    assert runs.column("anomalous_steps").to_pylist() == [4, 2, 0, 5, 2, 0]
    wrong = runs.set_column(runs.schema.get_field_index("anomalous_steps"), "anomalous_steps",
                            pa.array([4, 2, 0, 5, 2, 7], pa.int64()))
    check_invariants(tables, "c")  # as written: holds
    with pytest.raises(StoreError, match="anomalous_steps counts its steps labeled 1"):
        check_invariants({**tables, "runs": wrong}, "c")
