"""Reviewers' verdicts: the append-only table in the store, its CLI round trip, the review orders.

The store is the small hand-made one of ``review_store.py`` (its expected orders are worked out
there by hand).
"""
from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import queries
import review_store
from auditatlas import store, verdicts
from auditatlas.analyses import review_queue
from cli_support import run_cli


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Read-only: the order tests read it as it is."""
    return review_store.build(tmp_path_factory.mktemp("review") / "store")


@pytest.fixture()
def root(built, tmp_path) -> Path:
    """A private copy for a test that writes (a copy costs milliseconds, a build about 2 s)."""
    return Path(shutil.copytree(built, tmp_path / "store"))


def _verdict(value: str, reviewer: str = "ann", step: int = 1, at: str | None = None, **kw) -> dict:
    return verdicts.verdict("r", "r:a", step, value, reviewer, reviewed_at=at, **kw)


def _history(root: Path):
    return queries.run("review_history", root=root)


def _latest(root: Path):
    return queries.run("reviewed_labels", root=root).set_index(["run_id", "step_idx"])


# ------------------------------------------------------------------------------------ the store


def test_latest_verdict_counts_and_history_is_kept(root):
    verdicts.append_verdicts(root, [_verdict("anomaly", "ann", at="2026-01-01T10:00:00+00:00")])
    verdicts.append_verdicts(root, [_verdict("normal", "bob", at="2026-01-01T11:00:00+00:00", note="looked again")])
    verdicts.append_verdicts(root, [_verdict("unsure", "ann", step=2, at="2026-01-01T09:00:00+00:00")])
    history = _history(root)
    assert list(history["verdict"]) == ["unsure", "anomaly", "normal"]  # oldest first
    latest = _latest(root)
    assert len(latest) == 2
    a1 = latest.loc[("r:a", 1)]
    assert (a1["verdict"], a1["label"], a1["reviewer"], a1["note"]) == ("normal", 0, "bob", "looked again")
    assert (a1["n_verdicts"], a1["n_reviewers"], a1["released_label"], bool(a1["orphaned"])) == (2, 2, 0, False)
    a2 = latest.loc[("r:a", 2)]
    assert a2["verdict"] == "unsure" and pd.isna(a2["label"]) and a2["released_label"] == 1


def test_an_older_verdict_given_later_does_not_win(root):
    """Latest means latest reviewed_at, not last written (an imported history may come late)."""
    verdicts.append_verdicts(root, [_verdict("anomaly", at="2026-01-02T00:00:00Z")])
    verdicts.append_verdicts(root, [_verdict("normal", at="2026-01-01T00:00:00Z")])
    assert _latest(root).loc[("r:a", 1), "verdict"] == "anomaly"


def test_parts_are_appended_then_merged_with_every_row_kept(root):
    for i in range(5):
        verdicts.append_verdicts(root, [_verdict("anomaly", step=i % 4)], compact_at=3)
    entry = store.read_manifest(root)["sources"][verdicts.REVIEWS_SOURCE]
    parts = sorted((root / entry["dir"] / "verdicts").glob("part-*.parquet"))
    # writes 1-3 add a part each; write 4 finds 3 and merges them (plus its own): 2; write 5: 3
    assert len(parts) == 3
    assert len(_history(root)) == 5 and store.health(root, deep=True) == []


def test_a_verdict_id_held_already_is_not_added_again(root):
    row = _verdict("anomaly")
    verdicts.append_verdicts(root, [row])
    entry = verdicts.append_verdicts(root, [row, _verdict("normal", step=0)])
    assert entry["added"] == 1 and len(_history(root)) == 2
    twice = _verdict("unsure", step=2)
    assert verdicts.append_verdicts(root, [twice, twice])["added"] == 1 and len(_history(root)) == 3


def test_a_bad_verdict_writes_nothing(root):
    before = (root / store.MANIFEST).read_bytes()
    with pytest.raises(verdicts.BadVerdict, match="verdict 2: verdict 'maybe' is not one of anomaly, normal, unsure"):
        verdicts.append_verdicts(root, [_verdict("anomaly"), _verdict("maybe")])
    assert (root / store.MANIFEST).read_bytes() == before


def test_a_write_failing_midway_leaves_the_store_unchanged(root, monkeypatch):
    verdicts.append_verdicts(root, [_verdict("anomaly")])
    before = (root / store.MANIFEST).read_bytes()

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "_write_manifest", broken)  # the last step of a write: the commit
    with pytest.raises(OSError):
        verdicts.append_verdicts(root, [_verdict("normal")])
    monkeypatch.undo()
    assert (root / store.MANIFEST).read_bytes() == before
    assert list(_history(root)["verdict"]) == ["anomaly"]
    store.recover(root)  # the folder renamed in before the failed switch is a leftover, removed
    assert list(_history(root)["verdict"]) == ["anomaly"] and store.health(root, deep=True) == []


def _reviewer(root: str, name: str, count: int, start) -> None:
    start.wait()
    for i in range(count):
        verdicts.append_verdicts(root, [verdicts.verdict("r", "r:b", i % 4, "anomaly", name)])


def test_two_reviewers_writing_at_once_lose_nothing(root):
    """Two processes (forked: no new interpreter) append at the same moment, under the store lock."""
    context = multiprocessing.get_context("fork")
    start = context.Event()
    workers = [context.Process(target=_reviewer, args=(str(root), name, 3, start)) for name in ("ann", "bob")]
    for w in workers:
        w.start()
    start.set()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    history = _history(root)
    assert sorted(history["reviewer"].value_counts().items()) == [("ann", 3), ("bob", 3)]
    assert history["verdict_id"].is_unique


def test_a_verdict_on_a_step_a_reingest_dropped_is_kept_as_orphaned(root):
    verdicts.append_verdicts(root, [_verdict("anomaly", step=3)])
    runs = [{"run_id": "r:a", "corpus": "r", "backbone": "X", "outcome": "failure", "n_steps": 3}]
    steps = [{"run_id": "r:a", "corpus": "r", "step_idx": i, "label": 0} for i in range(3)]
    store.write_source(root, "traces", {"runs": runs, "steps": steps})
    latest = _latest(root)
    assert bool(latest.loc[("r:a", 3), "orphaned"]) is True


def test_a_store_written_before_the_verdicts_table_reads_as_holding_none(root):
    """Sources written before the table existed have no folder for it: healthy, no verdicts."""
    entry = store.read_manifest(root)["sources"]["traces"]
    shutil.rmtree(root / entry["dir"] / "verdicts")
    assert store.health(root, deep=True) == []
    assert _history(root).empty


# ------------------------------------------------------------------------------------ the CLI


def test_export_then_ingest_round_trip(root, built, tmp_path):
    verdicts.append_verdicts(root, [_verdict("anomaly", note='says "x", then\na line', failure_mode="wrong tool",
                                            at="2026-01-01T10:00:00Z", queue="doubt")])
    verdicts.append_verdicts(root, [_verdict("normal", "bob", step=0, at="2026-01-01T11:00:00Z", queue="random",
                                            seed=7)])
    other = Path(shutil.copytree(built, tmp_path / "other"))
    for name in ("verdicts.csv", "verdicts.parquet"):
        out = tmp_path / name
        done = run_cli("--store", str(root), "reviews", "export", "--out", str(out))
        assert done.returncode == 0 and "wrote 2 verdict(s)" in done.stdout
        done = run_cli("--store", str(other), "ingest", "reviews", str(out))
        assert done.returncode == 0, done.stderr
    exported, imported = _history(root), _history(other)
    assert len(imported) == 2  # the second file's verdicts were held already (same ids)
    columns = ["verdict_id", "run_id", "step_idx", "verdict", "failure_mode", "note", "reviewer", "reviewed_at",
               "queue", "seed"]
    assert imported[columns].astype(str).values.tolist() == exported[columns].astype(str).values.tolist()


def test_export_refuses_another_file_kind(root, tmp_path):
    done = run_cli("--store", str(root), "reviews", "export", "--out", str(tmp_path / "v.xlsx"))
    assert done.returncode == 2 and "must end in .csv or .parquet" in done.stderr


def _csv(path: Path, rows: list[dict]) -> Path:
    pcsv.write_csv(pa.Table.from_pylist(rows), path)
    return path


def test_ingest_names_every_unknown_step_in_one_sentence_and_writes_nothing(root, tmp_path):
    before = (root / store.MANIFEST).read_bytes()
    path = _csv(tmp_path / "v.csv", [
        {"run_id": "r:a", "step_idx": "1", "verdict": "anomaly", "reviewer": "ann"},
        {"run_id": "r:a", "step_idx": "9", "verdict": "normal", "reviewer": "ann"},
        {"run_id": "r:zz", "step_idx": "0", "verdict": "normal", "reviewer": "ann"},
    ])
    done = run_cli("--store", str(root), "ingest", "reviews", str(path))
    assert done.returncode == 1
    assert (f"error: {path}: 2 row(s) name a step the store does not hold: run r:a step 9 (line 3), "
            f"run r:zz step 0 (line 4).") in done.stderr
    assert (root / store.MANIFEST).read_bytes() == before


def test_ingest_names_each_bad_row_and_writes_nothing(root, tmp_path):
    before = (root / store.MANIFEST).read_bytes()
    path = _csv(tmp_path / "v.csv", [
        {"run_id": "r:a", "step_idx": "1", "verdict": "anomaly", "reviewer": "ann", "reviewed_at": ""},
        {"run_id": "r:a", "step_idx": "x", "verdict": "wrong", "reviewer": "ann", "reviewed_at": ""},
        {"run_id": "r:a", "step_idx": "2", "verdict": "normal", "reviewer": "", "reviewed_at": "yesterday"},
    ])
    done = run_cli("--store", str(root), "ingest", "reviews", str(path))
    assert done.returncode == 1
    assert f"error: {path}: line 3: verdict 'wrong' is not one of anomaly, normal, unsure." in done.stderr
    assert f"error: {path}: line 3: step_idx 'x' is not a step number (0, 1, 2, …)." in done.stderr
    assert f"error: {path}: line 4: no reviewer." in done.stderr
    assert "line 2" not in done.stderr
    assert (root / store.MANIFEST).read_bytes() == before


# ------------------------------------------------------------------------------------ the orders


def _keys(frame) -> list[tuple[str, int]]:
    return [(r, int(s)) for r, s in zip(frame["run_id"], frame["step_idx"])]


def test_doubt_order_is_the_hand_worked_one(built):
    doubt = review_queue.queue(queries.runner(built), "doubt", {}, 0)
    assert _keys(doubt) == review_store.DOUBT_ORDER
    assert list(doubt["contradicting"]) == [4, 3, 3, 3, 3]
    assert list(doubt["share"]) == [1.0, 1.0, 1.0, 1.0, 0.75]


# A supervised half by hand for the store's corpus r (run, step: P(label), cleanlab's label issue).
# With the label-free half above: a2 and b1 are not in it (doubt = their share, 1.0; run order),
# a0 is doubted by the half alone (an issue, 1 - 0.05), b2 is not in it (share 0.75), a1 and b3
# are (1 - 0.6, 1 - 0.9); a3 is in neither half's doubt (no flag, no issue), nor is b0.
HALF = {("r:a", 0): (0.05, True), ("r:a", 1): (0.6, False), ("r:a", 3): (0.5, False), ("r:b", 3): (0.9, False)}


@pytest.mark.parametrize("as_table", ["pandas", "categorical", "arrow", "parquet"])
def test_doubt_order_with_a_supervised_half_is_the_hand_worked_one(built, as_table, tmp_path):
    keys = list(HALF)
    half = pd.DataFrame({"run_id": [r for r, _ in keys], "step_idx": [i for _, i in keys],
                         "self_confidence": [HALF[k][0] for k in keys], "label_issue": [HALF[k][1] for k in keys]})
    if as_table != "pandas":  # the kept half: run ids as categories, read back from Parquet as Arrow
        half["run_id"] = half["run_id"].astype("category")
    if as_table in ("arrow", "parquet"):
        half = pa.Table.from_pandas(half, preserve_index=False)
    if as_table == "parquet":  # as a kept half is handed over: its file
        import pyarrow.parquet as pq

        pq.write_table(half, tmp_path / "half.parquet")
        half = tmp_path / "half.parquet"
    doubt = review_queue.queue(queries.runner(built), "doubt", {}, 0, supervised=half)
    assert _keys(doubt) == [("r:a", 2), ("r:b", 1), ("r:a", 0), ("r:b", 2), ("r:a", 1), ("r:b", 3)]
    assert doubt["doubt"].tolist() == pytest.approx([1.0, 1.0, 0.95, 0.75, 0.4, 0.1])
    assert doubt["label_issue"].tolist() == [False, False, True, False, False, False]
    assert doubt["free_contradicts"].tolist() == [True, True, False, True, True, True]


def test_flagged_order_is_the_hand_worked_one(built):
    flagged = review_queue.queue(queries.runner(built), "flagged", {}, 0)
    assert _keys(flagged) == review_store.FLAGGED_ORDER
    assert list(flagged["n_top"]) == [3, 2]


@pytest.mark.parametrize("order", ["flagged", "doubt"])
def test_an_order_reads_one_store_version_while_a_write_lands_between_its_queries(root, order):
    """The orders number the slice's steps in one query and read each set's scores by those
    numbers in others. A run written in between (``u:a``, ahead of ``u:c`` in run id order)
    would shift the numbers under them; on one version the order is the one before the write,
    and the next order reads the new version."""
    before = review_queue.queue(queries.runner(root), order, {}, 0)
    asked: list[str] = []

    with queries.one_version(root) as query:
        def write_after_the_first(name, params=None):
            asked.append(name)
            if len(asked) == 2:
                review_store.write_traces(root, {"u:a": [None] * 3, **review_store.LABELS},
                                          {"u:a": "Z", **review_store.BACKBONE})
            return query(name, params)

        during = review_queue.queue(write_after_the_first, order, {}, 0)
    assert len(asked) > 2  # the write landed between the order's queries
    pd.testing.assert_frame_equal(during, before)
    assert len(queries.run("review_run_steps", {"slice": {}}, root=root)) == len(review_store.LABELS) + 1
    after = review_queue.queue(queries.runner(root), order, {}, 0)
    assert _keys(after) == _keys(before)  # u:a is unlabeled and unscored: the same steps


def test_doubt_order_follows_the_slice(built):
    """On backbone Y only (run r:b, 4 steps: top decile = rank 1): U1 and U3 flag b2, U2 gives
    all four 0.1 (all tied at rank 1: it flags every step), S1 is left out. b1 and b3 are
    anomalies U2 flags: not in the queue; b0 normal: U2 only of 3, not most; b2 normal: U1 U2
    U3 Z1, 4 of 4."""
    doubt = review_queue.queue(queries.runner(built), "doubt", {"backbone": ["Y"]}, 0)
    assert _keys(doubt) == [("r:b", 2)]
    assert list(doubt["contradicting"]) == [4]


def test_random_order_is_a_seeded_shuffle_of_the_labeled_steps(built):
    query = queries.runner(built)
    # The definition: the slice's labeled steps in (run, step) order, permuted by numpy's seeded generator.
    by_key = sorted(review_store.R_STEPS)
    expected = [by_key[i] for i in np.random.default_rng(3).permutation(len(by_key))]
    assert _keys(review_queue.queue(query, "random", {}, 3)) == expected
    assert _keys(review_queue.queue(query, "random", {}, 3)) == expected  # the same seed, the same order
    assert _keys(review_queue.queue(query, "random", {}, 4)) != expected
    assert set(_keys(review_queue.queue(query, "random", {"backbone": ["Y"]}, 3))) == {("r:b", i) for i in range(4)}


def test_a_verdict_does_not_change_the_derived_tables_key(root):
    """No derived table reads verdicts: a verdict written must not rebuild them (seconds to
    minutes at scale), while any other write does."""
    from queries import derived, template, views

    def key() -> str:
        return derived.cache_key(views.manifest_bytes(store.read_manifest(root)), template.text)

    before = key()
    verdicts.append_verdicts(root, [_verdict("anomaly")])
    verdicts.append_verdicts(root, [_verdict("normal")])  # the first reviews folder is now retired
    assert key() == before
    store.remove_source(root, "sets")
    assert key() != before


def test_ingest_keeps_a_long_note_and_names_the_true_line_after_a_note_of_two_lines(root, tmp_path):
    """One CSV reader for every adapter: a note past the csv module's 128 KiB is read (and kept up
    to TEXT_LIMIT), and a row's line is the line it ends on when a quoted note spans two."""
    path = tmp_path / "v.csv"
    path.write_text("run_id,step_idx,verdict,reviewer,note\n"
                    f"r:a,1,anomaly,ann,{'n' * 200_000}\n"
                    'r:a,0,normal,ann,"two\nlines"\n'
                    "r:a,x,normal,ann,\n")
    done = run_cli("--store", str(root), "ingest", "reviews", str(path))
    assert done.returncode == 1 and f"error: {path}: line 5: step_idx 'x'" in done.stderr, done.stderr
    path.write_text("run_id,step_idx,verdict,reviewer,note\n" f"r:a,1,anomaly,ann,{'n' * 200_000}\n")
    done = run_cli("--store", str(root), "ingest", "reviews", str(path))
    assert done.returncode == 0, done.stderr
    assert _history(root)["note"].tolist() == ["n" * verdicts.TEXT_LIMIT]


def test_a_prediction_on_a_step_the_run_lacks_is_left_out_of_the_flags(root):
    """A set V4 ties c1 and d0 at 0.9 and also scores 0.95 on steps no run of the store has (one
    past u:c's last step, a negative index, a run the store lacks). Counted, they would make
    V4's top decile (8 scores: rank 1) hold only them, so V4 would flag neither c1 nor d0 and d0
    (2 of 4 sets) would leave the flagged order; left out, V4 scores 5 steps, ties c1 and d0 at
    rank 1, and both stay: c1 4 of 4, d0 3 of 4."""
    real = [("u:c", i) for i in range(3)] + [("u:d", i) for i in range(2)]
    stray = [("u:c", 3), ("u:d", -1), ("u:nowhere", 0)]
    store.write_source(root, "stray", {
        "prediction_sets": [{"set_id": "V4", "corpus": "u", "method": "v4", "family": "test",
                             "supervision": "unsupervised", "granularity": "step", "origin": "release"}],
        "predictions": [{"set_id": "V4", "corpus": "u", "run_id": r, "step_idx": i, "split": "all",
                         "score": 0.95 if (r, i) in stray else 0.9 if (r, i) in {("u:c", 1), ("u:d", 0)} else 0.1}
                        for r, i in real + stray]})
    flagged = review_queue.queue(queries.runner(root), "flagged", {}, 0)
    assert _keys(flagged) == review_store.FLAGGED_ORDER
    assert list(flagged["n_top"]) == [4, 3] and list(flagged["n_sets"]) == [4, 4]


def test_a_set_s_top_decile_counts_a_step_scored_twice_once_at_its_highest(root):
    """A set W1 scores the 30 steps of run w:long 0..29, and step 0 a second time at 100 (its
    highest score counts). 30 steps: k = 3 (counting the second score as a step, 31 scores,
    would make it 4 and add step 27; keeping the last score would leave step 0 out), so the top
    decile is steps 0, 29 and 28, and on corpus w alone (one set) those are the flagged order:
    share 1, then run and step."""
    store.write_source(root, "long", {
        "corpora": [{"corpus": "w", "title": "w", "kind": "real", "label_process": "none"}],
        "runs": [{"run_id": "w:long", "corpus": "w", "backbone": "Z", "outcome": "failure", "n_steps": 30,
                  "label_process": "none"}],
        "steps": [{"run_id": "w:long", "corpus": "w", "step_idx": i, "agent": "agent0", "action": "ACT",
                   "label": None, "label_source": None, "text_in": "in", "text_out": "out"} for i in range(30)],
        "prediction_sets": [{"set_id": "W1", "corpus": "w", "method": "w1", "family": "test",
                             "supervision": "unsupervised", "granularity": "step", "origin": "release"}],
        "predictions": [{"set_id": "W1", "corpus": "w", "run_id": "w:long", "step_idx": i, "split": "all",
                         "score": float(i)} for i in range(30)]
                       + [{"set_id": "W1", "corpus": "w", "run_id": "w:long", "step_idx": 0, "split": "all",
                           "score": 100.0}]})
    flagged = review_queue.queue(queries.runner(root), "flagged", {"corpus": ["w"]}, 0)
    assert _keys(flagged) == [("w:long", 0), ("w:long", 28), ("w:long", 29)]
    assert list(flagged["n_sets"]) == [1, 1, 1] and list(flagged["share"]) == [1.0, 1.0, 1.0]


def test_a_step_the_half_holds_without_a_value_is_ordered_by_the_label_free_half(built):
    """HALF with b3's probability missing: b3 is ordered as if the half had not computed it, by
    its label-free share (1.0, all four sets contradicting it), first; a NaN must not sort
    before every doubt nor after every one."""
    keys = list(HALF)
    half = pd.DataFrame({"run_id": [r for r, _ in keys], "step_idx": [i for _, i in keys],
                         "self_confidence": [float("nan") if k == ("r:b", 3) else HALF[k][0] for k in keys],
                         "label_issue": [HALF[k][1] for k in keys]})
    doubt = review_queue.queue(queries.runner(built), "doubt", {}, 0, supervised=half)
    assert _keys(doubt) == [("r:b", 3), ("r:a", 2), ("r:b", 1), ("r:a", 0), ("r:b", 2), ("r:a", 1)]
    assert doubt["doubt"].tolist() == pytest.approx([1.0, 1.0, 1.0, 0.95, 0.75, 0.4])
    assert doubt["self_confidence"].isna().tolist() == [True, True, True, False, True, False]
