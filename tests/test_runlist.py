"""The run list's page (auditatlas.runlist.run_page): runs paged on a run column, then the
page's step counts read for its run ids alone, on a small authored store."""
from __future__ import annotations

import pytest

import queries
from auditatlas import runlist, store

# run -> (backbone, labels per (scope, label)); chain length = most failures in one scope if >= 2.
RUNS = {
    "c:a": ("X", [("s1", 1), ("s1", 1), ("s1", 1), ("s2", 1), ("s2", 0)]),  # 4 anomalous, chain 3
    "c:b": ("Y", [("s1", 1), ("s2", 1), ("s2", 0)]),                        # 2 anomalous, no chain
    "c:c": ("X", [("s1", 0), ("s1", None)]),                                # none
    "c:d": ("Y", [("s1", 1), ("s1", 1), ("s2", 1), ("s2", 1), ("s2", 1)]),  # 5 anomalous, chain 3
}


@pytest.fixture()
def root(tmp_path):
    runs, steps = [], []
    for run_id, (backbone, labels) in RUNS.items():
        runs.append({"run_id": run_id, "corpus": "c", "backbone": backbone, "outcome": "failure",
                     "n_steps": len(labels)})
        steps += [{"run_id": run_id, "corpus": "c", "step_idx": i, "action": "A", "scope": scope, "label": label}
                  for i, (scope, label) in enumerate(labels)]
    store.write_source(tmp_path, "c", {"runs": runs, "steps": steps})
    return tmp_path


def _params(**kw):
    return {"slice": {}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [], "f_difficulty": [],
            "f_outcome": [], "min_steps": None, "max_steps": None, "sort": "run", "descending": False,
            "limit": 50, "offset": 0, **kw}


def _query(root):
    return lambda name, params: queries.run(name, params, root=root)


def test_page_carries_each_runs_counts(root):
    page = runlist.run_page(_query(root), _params())
    assert page[["run", "anomalous_steps", "chain_length"]].values.tolist() == [
        ["c:a", 4, 3], ["c:b", 2, 0], ["c:c", 0, 0], ["c:d", 5, 3]]
    assert page["anomalous_steps"].dtype == "int64"


def test_page_order_offset_and_slice_are_kept(root):
    page = runlist.run_page(_query(root), _params(sort="backbone", descending=True, limit=2, offset=1))
    # Backbone descending, ties by run ascending: b, d (Y), then a, c (X); offset 1, two rows.
    assert page["run"].tolist() == ["c:d", "c:a"]
    assert page["chain_length"].tolist() == [3, 3]
    only_x = runlist.run_page(_query(root), _params(slice={"backbone": ["X"]}))
    assert only_x[["run", "anomalous_steps"]].values.tolist() == [["c:a", 4], ["c:c", 0]]


def test_empty_page(root):
    page = runlist.run_page(_query(root), _params(run_q="zzz", run_pattern="%zzz%"))
    assert page.empty and {"anomalous_steps", "chain_length"} <= set(page.columns)
