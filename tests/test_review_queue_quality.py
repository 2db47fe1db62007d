"""The doubt order against the random order on planted label flips.

A small simulated store (40 rooms, two cheap label-free detector sets), a seeded 5% of its
labels flipped in a copy (auditatlas.planted_flips); the doubt order must put clearly more of
the flips in its first 5% of steps than the random order does. The benchmark at the default
size is bench/review_queue.py (its figure in bench/README.md).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import queries
from auditatlas.analyses import queue_quality
from auditatlas.errors import AtlasError
from auditatlas.planted_flips import planted_copy

CORPUS = "maadbench-sim"
SLICE = {"corpus": [CORPUS]}


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, Path, pd.DataFrame]:
    from auditatlas.detectors.engine import score
    from auditatlas.ingest.demo import build_demo

    home = tmp_path_factory.mktemp("planted")
    original = home / "store"
    build_demo(original, rooms=40, seed=0)
    # Unsupervised sets never see a label, so scoring before the flip is what scoring after would be.
    score(original, ["ecod", "hbos"], SLICE, 1)
    copy = home / "copy"
    return original, copy, planted_copy(original, copy, CORPUS, 0.05, seed=0)


def test_the_flips_are_planted_in_the_copy_only(planted):
    original, copy, flips = planted
    before = queries.run("review_labeled_steps", {"slice": SLICE}, root=original)
    after = queries.run("review_labeled_steps", {"slice": SLICE}, root=copy)
    changed = before.merge(after, on=["run_id", "step_idx"], suffixes=("_before", "_after"))
    changed = changed[changed["label_before"] != changed["label_after"]]
    # 5% of the labeled steps, rounded: exactly the steps returned, each now the other label.
    assert len(flips) == round(0.05 * len(before)) == len(changed) > 5
    assert set(zip(changed["run_id"], changed["step_idx"])) == set(zip(flips["run_id"], flips["step_idx"]))
    assert (changed["label_after"] == 1 - changed["label_before"]).all()
    with pytest.raises(AtlasError, match="exists"):
        planted_copy(original, copy, CORPUS, 0.05, seed=0)


def test_the_doubt_order_finds_clearly_more_flips_than_random(planted):
    _, copy, flips = planted
    quality = queue_quality.measure(queries.runner(copy), copy, SLICE, flips)
    assert quality.window_steps == queue_quality.window_steps(quality.labeled)
    assert quality.notes == []  # the supervised half was computed
    # Random finds about 5% of them in the first 5%; the doubt order must find at least four times that.
    assert quality.random_mean < 0.15
    assert quality.doubt >= 0.25 and quality.doubt >= quality.random_mean + 0.2, quality


def test_window_and_capture_by_hand():
    assert queue_quality.window_steps(100) == 5 and queue_quality.window_steps(101) == 6
    order = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "step_idx": [0, 1, 0, 1]})
    flips = pd.DataFrame({"run_id": ["a", "b"], "step_idx": [1, 1]})
    assert queue_quality.captured(order, flips, 2) == 0.5  # a1 in the first two, b1 not
    assert queue_quality.captured(order, flips, 4) == 1.0


def test_self_confidence_is_the_probability_of_the_given_label():
    import numpy as np

    from auditatlas.analyses import label_doubt

    y = np.array([0, 1, 1, 0] * 5)
    probabilities = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4]] * 5)
    confidence, issue = label_doubt.rank_by_cleanlab(y, probabilities)
    assert confidence.tolist() == pytest.approx([0.9, 0.8, 0.3, 0.6] * 5)
    assert issue.dtype == bool and len(issue) == 20


def test_the_supervised_half_says_why_it_is_left_out_on_a_tiny_corpus(tmp_path):
    import review_store
    from auditatlas.analyses import label_doubt

    root = review_store.build(tmp_path / "store")
    half = label_doubt.supervised_doubt(queries.runner(root), root, {})
    assert half.steps.empty
    # Corpus r: 8 labeled steps in 2 runs (no rooms, so a run is a group); corpus u has no label.
    assert half.notes == ["The supervised half of label doubt is left out on corpus 'r': its labeled steps are in "
                          "2 room group(s), and 5 folds need 5."]
    # Left out, the half adds nothing: the doubt order is the label-free one, read as computed
    # or as kept (its Parquet file, read by the query).
    from functools import partial

    from auditatlas.analyses import review_queue
    from queries import kept

    kept_half = label_doubt.kept_supervised_doubt(queries.runner(root), root, {},
                                                  partial(kept.remember_frame, root, as_file=True))
    kept_half = label_doubt.kept_supervised_doubt(queries.runner(root), root, {},
                                                  partial(kept.remember_frame, root, as_file=True))
    assert str(kept_half.steps).endswith(".parquet")  # the second read the kept file
    for steps in (half.steps, kept_half.steps):
        order = review_queue.queue(queries.runner(root), "doubt", {}, supervised=steps)
        assert list(zip(order["run_id"], order["step_idx"])) == review_store.DOUBT_ORDER


class _Counting:
    """A classifier that remembers how many rows it was fit on (P = the training prior)."""

    def get_params(self, deep: bool = True) -> dict:
        return {}

    def fit(self, X, y):
        import numpy as np

        self.rows_, self.classes_ = len(y), np.array([0, 1])
        self.prior_ = np.array([(y == 0).mean(), (y == 1).mean()])
        return self

    def predict_proba(self, X):
        import numpy as np

        return np.tile(self.prior_, (len(X), 1))

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)


def test_a_capped_fit_uses_at_most_its_rows():
    import numpy as np

    from doubt_reference import CappedFit, out_of_fold

    y = np.array([1, 0, 0, 0] * 25)
    assert CappedFit(_Counting(), max_rows=40).fit(np.zeros((100, 1)), y).estimator_.rows_ == 40
    assert CappedFit(_Counting(), max_rows=400).fit(np.zeros((100, 1)), y).estimator_.rows_ == 100
    # Out of fold, the forest capped at 30 rows a fold: one probability row per step, each summing to 1.
    groups = np.arange(100) % 10
    probabilities = out_of_fold(np.random.default_rng(0).random((100, 2)), y, groups, max_fit=30)
    assert probabilities.shape == (100, 2) and np.allclose(probabilities.sum(axis=1), 1)


def test_the_chunked_half_is_the_half_on_the_whole_matrix(planted):
    """The half reads a corpus a chunk of runs at a time and fits each fold on a sample of it:
    its probabilities must be scikit-learn's cross_val_predict over the whole matrix (the
    capped forests of tests/doubt_reference.py), every labeled step scored, and a note must say how many
    steps each fit read when the cap bit."""
    import numpy as np

    from auditatlas.analyses import label_doubt
    from auditatlas.detectors.features import step_features
    from auditatlas.detectors.splits import run_groups
    from doubt_reference import out_of_fold

    original = planted[0]
    query = queries.runner(original)
    features = step_features(query, CORPUS, SLICE)
    labeled = features.labeled
    y = features.label[labeled].astype(int)
    groups = run_groups(features.runs)[0][features.run_pos][labeled]
    whole = out_of_fold(features.X[labeled], y, groups, max_fit=150)
    expected, _ = label_doubt.rank_by_cleanlab(y, whole)

    half = label_doubt.supervised_doubt(query, original, SLICE, chunk_runs=7, max_fit=150)
    assert len(half.steps) == int(labeled.sum())
    assert half.steps["run_id"].tolist() == features.run_ids()[features.run_pos][labeled].tolist()
    assert half.steps["step_idx"].tolist() == features.step_idx[labeled].tolist()
    np.testing.assert_allclose(half.steps["self_confidence"].to_numpy(), expected, rtol=0, atol=1e-12)
    assert any("seeded sample of 150 of its up to" in note and f"{int(labeled.sum()):,} labeled steps is scored" in note
               for note in half.notes), half.notes
    assert not label_doubt.supervised_doubt(query, original, SLICE).notes  # under the cap: every step fitted
