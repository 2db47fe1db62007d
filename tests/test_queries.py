"""Named queries over a small hand-made store: slice binding and the Overview counts."""
from __future__ import annotations

import duckdb
import pytest

import queries
from auditatlas import store


@pytest.fixture()
def tiny(tmp_path):
    runs, steps = [], []
    # backbone X: 4 labeled OBSERVE_CLUE steps, 1 anomalous (silent: its puzzle succeeded),
    # 1 unlabeled; backbone Y: 2 labeled SOLVE_CLUE, both anomalous, one a format error.
    layout = {
        "X": [("OBSERVE_CLUE", 0, True, False), ("OBSERVE_CLUE", 1, True, False), ("OBSERVE_CLUE", 0, True, False),
              ("OBSERVE_CLUE", 0, True, False), ("SELECT_PUZZLE", None, True, False)],
        "Y": [("SOLVE_CLUE", 1, False, False), ("SOLVE_CLUE", 1, False, True)],
    }
    for backbone, rows in layout.items():
        run_id = f"t:{backbone}"
        runs.append({"run_id": run_id, "corpus": "t", "backbone": backbone, "temperature": 0.3 if backbone == "X" else 0.0,
                     "outcome": "failure", "n_steps": len(rows)})
        for i, (action, label, scope_ok, fmt) in enumerate(rows):
            steps.append({"run_id": run_id, "corpus": "t", "step_idx": i, "action": action, "label": label,
                          "scope_success": scope_ok, "is_format_error": fmt})
    store.write_source(tmp_path, "t", {"runs": runs, "steps": steps})
    return tmp_path


def test_action_rates_exclude_unlabeled(tiny):
    df = queries.run("action_rates", {"slice": {}}, root=tiny).set_index(["backbone", "action"])
    assert df.loc[("X", "OBSERVE_CLUE"), "labeled_steps"] == 4
    assert df.loc[("X", "OBSERVE_CLUE"), "success_rate"] == pytest.approx(0.75)
    assert df.loc[("X", "SELECT_PUZZLE"), "labeled_steps"] == 0
    assert df.loc[("X", "SELECT_PUZZLE"), "unlabeled_steps"] == 1
    assert df.loc[("Y", "SOLVE_CLUE"), "success_rate"] == 0


def test_runner_binds_the_store_and_defaults_params(tiny, tmp_path_factory):
    """``queries.runner(root)`` is the query function analyses take: it reads the store at
    ``root`` (not the default one) and runs a query without parameters."""
    query = queries.runner(tiny)
    rates = query("action_rates", {"slice": {"backbone": ["Y"]}})
    assert set(rates["backbone"]) == {"Y"}
    corpora = query("slice_options")
    assert set(corpora.loc[corpora["column_name"] == "corpus", "value"]) == {"t"}
    empty = tmp_path_factory.mktemp("other-store")
    store.write_source(empty, "u", {"runs": [{"run_id": "u:1", "corpus": "u", "outcome": "success", "n_steps": 0}]})
    other = queries.runner(empty)("slice_options")
    assert set(other.loc[other["column_name"] == "corpus", "value"]) == {"u"}


def test_slice_filters_runs(tiny):
    df = queries.run("action_rates", {"slice": {"backbone": ["Y"]}}, root=tiny)
    assert set(df["backbone"]) == {"Y"}
    df = queries.run("slice_summary", {"slice": {"temperature": ["0.3"]}}, root=tiny)
    assert df["runs"].sum() == 1 and df["steps"].sum() == 5


def test_slice_value_is_bound_not_formatted(tiny):
    df = queries.run("slice_summary", {"slice": {"backbone": ["X' OR '1'='1"]}}, root=tiny)
    assert df.empty


def test_silent_failures_keep_format_errors_apart(tiny):
    df = queries.run("silent_failures", {"slice": {}}, root=tiny).set_index("backbone")
    assert df.loc["X", "action_failures"] == 1 and df.loc["X", "silent_action_failures"] == 1
    assert df.loc["Y", "action_failures"] == 1 and df.loc["Y", "format_errors"] == 1
    assert df.loc["Y", "silent_action_failures"] == 0


def test_silent_failures_keep_a_backbone_without_anomalies(tiny):
    # The query reads only anomalous steps; a backbone of the slice without any still gets a
    # row of zeros (its rates are then undefined, not missing from the table).
    store.write_source(tiny, "z", {"runs": [{"run_id": "t:Z", "corpus": "t", "backbone": "Z", "outcome": "success",
                                             "n_steps": 1}],
                                   "steps": [{"run_id": "t:Z", "corpus": "t", "step_idx": 0, "action": "SOLVE_CLUE",
                                              "label": 0, "scope_success": True}]})
    df = queries.run("silent_failures", {"slice": {}}, root=tiny).set_index("backbone")
    assert list(df.index) == ["X", "Y", "Z"]
    assert df.loc["Z"].tolist() == [0, 0, 0, 0, 0]
    assert df.loc["X", "action_failures"] == 1
    only_z = queries.run("silent_failures", {"slice": {"backbone": ["Z"]}}, root=tiny)
    assert only_z["backbone"].tolist() == ["Z"] and only_z["action_failures"].tolist() == [0]


def test_rates_leave_undefined_blank(tiny):
    from auditatlas.analyses import step_rates as rates

    counts = queries.run("action_rates", {"slice": {}}, root=tiny)
    table = rates.action_success(counts).set_index(["backbone", "action"])
    assert table.loc[("X", "OBSERVE_CLUE"), "success_pct"] == pytest.approx(75.0)
    assert table["success_pct"].isna().loc[("X", "SELECT_PUZZLE")]


def test_corpus_counts(tiny):
    from auditatlas.inventory import corpus_counts

    counts = corpus_counts(tiny)
    assert counts["t"]["runs"] == 2 and counts["t"]["steps"] == 7
    assert counts["t"]["labeled_steps"] == 6 and counts["t"]["anomalous_steps"] == 3


def test_each_binds_every_value_on_its_own():
    sql, bound = queries.template.each("SELECT 1 WHERE x IN @each($ids) AND y = $k", {"ids": ["a", "b'); DROP", "c"], "k": 1})
    assert sql == "SELECT 1 WHERE x IN ($ids__0, $ids__1, $ids__2) AND y = $k"
    assert bound == {"k": 1, "ids__0": "a", "ids__1": "b'); DROP", "ids__2": "c"}
    sql, bound = queries.template.each("SELECT 1 WHERE x IN @each($ids)", {"ids": []})
    assert sql == "SELECT 1 WHERE x IN (NULL)" and bound == {}


def test_slice_options_stored_per_store_version(tiny, monkeypatch):
    """The sidebar's choices are stored once per store version (derived table slice_choices);
    they must be the ones counted over the runs themselves."""
    got = queries.run("slice_options", {}, root=tiny)
    rows = sorted(map(tuple, got[["column_name", "value", "runs"]].values.tolist()))
    assert rows == [("backbone", "X", 1), ("backbone", "Y", 1), ("corpus", "t", 2), ("outcome", "failure", 2),
                    ("temperature", "0.0", 1), ("temperature", "0.3", 1)]
    assert (queries.database.for_store(tiny).derived / "slice_choices.parquet").is_file()
    monkeypatch.setattr(queries.twins, "TWINS", {})
    live = queries.run("slice_options", {}, root=tiny)
    import pandas as pd

    pd.testing.assert_frame_equal(live, got)


def test_possible_pairs_are_stored_per_store_version_and_read_from_there(tiny, monkeypatch):
    """The pairs the Propagation heatmap can hold are the whole store's (derived table
    possible_pairs); by hand from ``tiny``: run X is OBSERVE_CLUE x4 then SELECT_PUZZLE, run Y
    SOLVE_CLUE x2 (each run its own scope)."""
    import pandas as pd

    prepared: list[str] = []
    prepare = queries.named.prepare
    monkeypatch.setattr(queries.named, "prepare", lambda q, p: prepared.append(q.name) or prepare(q, p))
    got = queries.run("propagation_possible", {}, root=tiny)
    assert list(map(tuple, got.values.tolist())) == [("OBSERVE_CLUE", "OBSERVE_CLUE"), ("OBSERVE_CLUE", "SELECT_PUZZLE"),
                                                     ("SOLVE_CLUE", "SOLVE_CLUE")]
    assert prepared == ["propagation_possible_stored"]
    assert (queries.database.for_store(tiny).derived / "possible_pairs.parquet").is_file()
    monkeypatch.setattr(queries.twins, "TWINS", {})
    pd.testing.assert_frame_equal(queries.run("propagation_possible", {}, root=tiny), got)
    assert prepared[-1] == "propagation_possible"


# ----------------------------------------------------------------------------- declarations

def test_placeholders_skip_comments_and_string_literals():
    sql = "SELECT $a, '$b', 'it''s $c' -- $d and 'e\n, x IN @each($ids), $f_2"
    assert queries.template.placeholders(sql) == {"a", "ids", "f_2"}


def test_a_query_declares_its_placeholders():
    grid = queries.named.query("grid_cells")
    assert grid.parameters == {"set_ids", "backbones", "actions", "by_backbone", "by_action"}
    assert grid.uses_slice and grid.reads_derived
    # The twin reads no label lists: it declares fewer parameters than its query.
    assert queries.named.query("grid_cells_ranked").parameters == {"set_ids", "by_backbone", "by_action"}
    # A list expanded by @each is one parameter; a fragment's placeholders are its includer's.
    assert queries.named.query("error_steps").parameters == {"run_ids"}
    assert {"run_q", "run_pattern", "min_chain", "max_chain"} <= queries.named.query("explorer_runs").parameters
    assert not queries.named.query("slice_options").reads_derived


def test_a_twin_binds_exactly_its_declared_parameters():
    params = {"slice": {"corpus": ["t"]}, "set_ids": ["s"], "backbones": ["X"], "actions": ["A"],
              "by_backbone": True, "by_action": False}
    sql, bound = queries.named.prepare(queries.named.query("grid_cells_ranked"), params)
    assert bound == {"corpus": "t", "set_ids": ["s"], "by_backbone": True, "by_action": False}
    assert "r.corpus = $corpus" in sql
    _, bound = queries.named.prepare(queries.named.query("grid_cells"), params)
    assert set(bound) == {"corpus", "set_ids", "backbones", "actions", "by_backbone", "by_action"}


def test_every_twin_takes_what_its_query_takes():
    for name, twin in queries.twins.TWINS.items():
        query, stored = queries.named.query(name), queries.named.query(twin.query)
        assert stored.parameters <= query.parameters, name
        assert stored.uses_slice == query.uses_slice and stored.reads_derived, name


def test_derived_readers_are_declared():
    """derived.READERS names every query whose text reads a derived table (outside the slice
    CTEs every @slice query carries); the build queries themselves are not readers."""
    import re

    from queries import derived, template

    built = {derived.QUERY.get(t, t) for t in derived.TABLES}
    table = re.compile(r"\b(?:sliced_)?(?:" + "|".join(derived.TABLES) + r")\b")
    readers = set()
    for path in sorted(template.SQL_DIR.glob("*.sql")):
        if path.stem.startswith("_") or path.stem in built:
            continue
        text = re.sub(r"--[^\n]*", "", template.text(path.stem).replace(template.slice_ctes(()), ""))
        if table.search(text):
            readers.add(path.stem)
    assert readers == set(derived.READERS)


def test_parameters_a_query_does_not_declare_are_refused(tiny):
    with pytest.raises(ValueError, match=r"named query 'detector_sets' has no parameter\(s\) nope"):
        queries.run("detector_sets", {"corpus": "t", "nope": 1}, root=tiny)
    with pytest.raises(ValueError, match=r"named query 'detector_sets' needs parameter\(s\) corpus"):
        queries.run("detector_sets", {}, root=tiny)


def test_a_frame_is_declared_and_registered_for_its_query_only(tiny):
    """@frame($supervised): a parameter of its query, refused when missing; a table is not bound
    as a value and is gone from the cursor once the query has run (the next query cannot read
    it); a Parquet file's path is bound and read by the query."""
    from pathlib import Path

    import pandas as pd

    issues = queries.named.query("review_supervised_half")
    assert issues.frames == {"supervised"} and issues.parameters == {"supervised"}
    sql, bound = queries.named.prepare(issues, {"slice": {}, "supervised": pd.DataFrame()})
    assert "frame__supervised" in sql and set(bound) == set()
    sql, bound = queries.named.prepare(issues, {"slice": {}, "supervised": Path("/x/h.parquet")})
    assert "read_parquet($supervised)" in sql and bound["supervised"] == "/x/h.parquet"  # a file: bound, not written in
    with pytest.raises(ValueError, match=r"needs parameter\(s\) supervised"):
        queries.run("review_supervised_half", {"slice": {}}, root=tiny)
    half = pd.DataFrame({"run_id": ["none"], "step_idx": [0], "self_confidence": [0.5], "label_issue": [True]})
    assert queries.run("review_supervised_half", {"slice": {}, "supervised": half}, root=tiny).empty
    with pytest.raises(duckdb.CatalogException):
        queries.connect(tiny).execute("SELECT * FROM frame__supervised")
    cursor_of_this_thread = queries.database.for_store(tiny)
    with cursor_of_this_thread.reading() as version:
        with pytest.raises(duckdb.CatalogException):
            cursor_of_this_thread.cursor_on(version).execute("SELECT * FROM frame__supervised")
