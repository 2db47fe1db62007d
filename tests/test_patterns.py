"""Steps like this one and failure clusters (auditatlas/patterns) on the hand-made store of
tests/patterns_store.py, whose answers are worked out there by hand."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import patterns_store as ps
import queries
from auditatlas.errors import AtlasError
from auditatlas.patterns import build, clusters, similar, vectors
from cli_support import run_cli


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return ps.build(tmp_path_factory.mktemp("patterns") / "store")


@pytest.fixture(scope="module")
def query(root):
    return queries.runner(root)


@pytest.fixture(scope="module")
def found(root, query):
    return vectors.load(root, query)


def _keys(frame) -> list[tuple[str, int]]:
    return [(str(r), int(s)) for r, s in frame[["run_id", "step_idx"]].itertuples(index=False)]


def test_a_planted_near_duplicate_is_the_first_neighbour(found, query):
    result = similar.similar_steps(found, query, *ps.ANCHOR, k=5)
    keys = _keys(result.neighbours)
    assert keys[:2] == [ps.DUPLICATE, ps.B_DUPLICATE]
    assert ps.ANCHOR not in keys
    assert list(result.neighbours["rank"]) == [1, 2, 3, 4, 5]
    # The other step 4s share the action, agent and position but no word: text cosine 0.
    assert result.neighbours["text_similarity"].iloc[2] == 0
    assert result.summary == "0 of the 5 nearest are labeled anomalies; 3 from B"


def test_neighbours_stay_in_the_slice(found, query):
    result = similar.similar_steps(found, query, *ps.ANCHOR, slice_={"backbone": ["B"]}, k=3)
    assert _keys(result.neighbours)[0] == ps.B_DUPLICATE
    assert set(result.neighbours["backbone"]) == {"B"}


def test_every_neighbour_carries_its_set_scores(found, query):
    result = similar.similar_steps(found, query, *ps.ANCHOR, k=2)
    # S1 scores step i of every run 0.1 * i: both neighbours are step 4.
    assert sorted(result.scores["score"].round(6)) == [0.4, 0.4]
    row = result.to_json()["neighbours"][0]
    assert row["scores"] == {"S1": pytest.approx(0.4)}
    assert row["backbone"] == "A" and row["label"] == 0


def test_bad_anchors_and_an_empty_slice_get_one_sentence(found, query):
    with pytest.raises(AtlasError, match=r"^The store holds no run 'p:99'\.$"):
        similar.similar_steps(found, query, "p:99", 0)
    with pytest.raises(AtlasError, match=r"^Run 'p:1' has no step 9 \(its steps are 0 to 5\)\.$"):
        similar.similar_steps(found, query, "p:1", 9)
    with pytest.raises(AtlasError, match="This slice holds no other step"):
        similar.similar_steps(found, query, *ps.ANCHOR, slice_={"backbone": ["nobody"]})
    with pytest.raises(AtlasError, match=r"^This slice holds no steps"):
        clusters.failure_clusters(found, query, {"backbone": ["nobody"]})
    with pytest.raises(AtlasError, match=r"^This slice has 18 labeled anomalies, fewer than the 20 clusters"):
        clusters.failure_clusters(found, query, n_clusters=20)


def test_planted_groups_come_out_as_the_clusters(found, query):
    result = clusters.failure_clusters(found, query, seed=0, n_clusters=3)
    assert result.source == "labeled anomalies"
    # Compare partitions, not numbers: each cluster is the steps of one planted group.
    groups = {frozenset(_keys(result.steps_of(c.number))) for c in result.clusters}
    planted = {frozenset((r, i) for r in ps.RUNS) for i in ps.GROUPS}
    assert groups == planted
    assert [c.size for c in result.clusters] == [6, 6, 6]
    timeout = next(c for c in result.clusters if set(result.steps_of(c.number)["step_idx"]) == {1})
    assert "timed" in timeout.top_terms or "database" in timeout.top_terms
    assert "parse" not in timeout.top_terms
    assert timeout.backbones == [("A", 0.5), ("B", 0.5)]
    assert timeout.actions == [("ACT", 1.0)]
    assert len(timeout.examples) == 3


def test_same_seed_same_clusters(found, query, root):
    first = clusters.failure_clusters(found, query, seed=3, n_clusters=3)
    # A fresh fit (the cache removed) with the same seed gives the same numbered partition.
    for path in (found.folder / clusters.CACHE).glob("*.npz"):
        path.unlink()
    again = clusters.failure_clusters(found, query, seed=3, n_clusters=3)
    assert first.members[["cluster", "run_id", "step_idx"]].equals(again.members[["cluster", "run_id", "step_idx"]])


def test_vectors_are_rebuilt_on_a_new_store_version(tmp_path):
    root = ps.build(tmp_path / "store")
    query = queries.runner(root)
    before = vectors.load(root, query)
    ps.build(root, extra_run=True)  # replaces the traces: a new manifest
    after = vectors.load(root, query)
    assert after.folder != before.folder and after.n_rows == before.n_rows + 6
    # The new run's steps say the planted words again: its step 4 (same action, agent and
    # place as the anchor) is now the first neighbour.
    result = similar.similar_steps(after, query, *ps.ANCHOR, k=3)
    assert _keys(result.neighbours)[0] == ("p:7", 4)
    assert build.is_built(after.folder)


def test_cli_json_answers_as_the_page(root, found, query):
    done = run_cli("--store", str(root), "similar", *map(str, ps.ANCHOR), "--k", "3", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [(n["run_id"], n["step_idx"]) for n in answer["neighbours"]][:2] == [ps.DUPLICATE, ps.B_DUPLICATE]
    assert answer["summary"] == similar.similar_steps(found, query, *ps.ANCHOR, k=3).summary
    done = run_cli("--store", str(root), "clusters", "--clusters", "3", "--slice", "backbone=A", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [c["size"] for c in answer["clusters"]] == [3, 3, 3]
    assert {frozenset((s["run_id"], s["step_idx"]) for s in c["steps"]) for c in answer["clusters"]} == \
        {frozenset((r, i) for r in ps.RUNS[:3]) for i in ps.GROUPS}


def test_cli_bad_input_is_one_sentence(root):
    done = run_cli("--store", str(root), "similar", "p:99", "0", "--json")
    assert done.returncode == 1
    assert done.stderr.strip() == "error: The store holds no run 'p:99'."
    done = run_cli("--store", str(root), "clusters", "--slice", "backbone=nobody")
    assert done.returncode == 1 and "This slice holds no steps" in done.stderr


def test_text_keeps_words_not_ids():
    from auditatlas.patterns import text

    names = set(text.words_of(["room_0042 note_p1 101 compass shows"]).values())
    assert names == {"compass", "shows"}
    weighted = text.weigh(text.counts(["a compass", "compass drawer", "thermometer drawer"]),
                          text.idf(np.bincount(text.counts(["a compass", "compass drawer", "thermometer drawer"]).indices,
                                               minlength=text.N_FEATURES), 3))
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    assert np.allclose(norms, 1.0)


def test_the_page_lists_neighbours_and_opens_a_cluster(root, monkeypatch):
    from app_support import open_page, page_texts

    at = open_page(root, monkeypatch, "pages/patterns.py", run="p:1", step="4", k="3", cluster="1", clusters="3")
    texts = page_texts(at)
    # The link's cluster count: the three planted groups, one row each, six steps each.
    assert at.number_input(key="patterns_clusters").value == 3
    assert len(at.dataframe[1].value) == 3
    assert "0 of the 3 nearest are labeled anomalies; 2 from A" in texts
    neighbours = at.dataframe[0].value
    assert list(zip(neighbours["run_id"], neighbours["step_idx"]))[:2] == [ps.DUPLICATE, ps.B_DUPLICATE]
    assert "score S1" in neighbours.columns and neighbours["explorer"].iloc[0].startswith("/explorer?run=p%3A2&step=4")
    assert "Its 6 steps" in texts


def test_the_page_says_an_unknown_run_in_one_sentence(root, monkeypatch):
    from app_support import open_page
    from components.safe import md

    at = open_page(root, monkeypatch, "pages/patterns.py", run="p:99")
    assert [w.value for w in at.warning] == [md("The store holds no run 'p:99'.")]


def test_the_export_writes_the_page(root, query):
    from auditatlas.export import export_view

    done = export_view(query, root, "/patterns?run=p:1&step=4&k=3&cluster=1&clusters=3")
    assert "similar-steps" in done.html and "cluster-steps" in done.html
    assert "18 labeled anomalies in 3 clusters (seed 0)." in done.html
    assert "0 of the 3 nearest are labeled anomalies; 2 from A" in done.html


def test_the_explorer_links_to_steps_like_this_one():
    from auditatlas.views.pages import PATTERNS, patterns_url

    url = patterns_url("p:1", 4, slice={"backbone": ["A"]})
    assert url == "/patterns?backbone=A&run=p%3A1&step=4"
    values, problems = PATTERNS.parse({"run": ["p:1"], "step": ["4"], "cluster": ["0"]})
    assert values["run"] == "p:1" and values["step"] == 4 and values["cluster"] is None and len(problems) == 1
    values, problems = PATTERNS.parse({"clusters": ["1"]})
    assert values["clusters"] == 8 and len(problems) == 1  # fewer than two clusters is no grouping


def test_an_unlabeled_corpus_clusters_its_flagged_steps(tmp_path):
    """No labels: the steps most sets flag are clustered instead, and the page says so."""
    root = ps.build(tmp_path / "store", labeled=False)
    query = queries.runner(root)
    result = clusters.failure_clusters(vectors.load(root, query), query, seed=0, n_clusters=2)
    assert result.source == "flagged steps"
    groups = {frozenset(_keys(result.steps_of(c.number))) for c in result.clusters}
    assert groups == {frozenset(ps.FLAGGED[:2]), frozenset(ps.FLAGGED[2:])}  # timeout apart from parse


def test_the_explorer_step_detail_links_to_its_steps_like_this_one(root, monkeypatch):
    from app_support import open_page

    at = open_page(root, monkeypatch, "pages/explorer.py", run="p:1", step="4")
    buttons = [b for b in at.get("link_button") if "like this one" in b.proto.label]
    assert [b.proto.url for b in buttons] == ["/patterns?run=p%3A1&step=4"]


def test_top_k_breaks_ties_by_the_lower_row_even_at_the_cut():
    rows = np.array([5, 1, 3, 2, 9])
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.7], dtype=np.float32)
    # 0.9 (row 1), 0.7 (row 9), then of the three rows tied at 0.5 the lowest, row 2.
    assert list(rows[similar.top_k(rows, scores, 3)]) == [1, 9, 2]
    assert list(rows[similar.top_k(rows, scores, 4)]) == [1, 9, 2, 3]
    # Offered a block at a time, the later blocks' equal scores lose to the held lower rows.
    best = similar.Best(3)
    for lo in range(0, 6, 2):
        block = np.arange(lo, lo + 2)
        best.offer(block, np.array([0.5, 0.5], dtype=np.float32))
    assert list(best.rows) == [0, 1, 2] and best.cut == 0.5


def test_the_scan_scores_every_row_by_its_features_when_no_word_is_shared(found):
    # No text: the anchor p:1 step 4 (ACT, solver, position 4/5; no token counts) against
    # another run's step 4 scores 0.2 + 0.1 + 0.05 = 0.35, a step 2 (ACT, solver, position
    # 2/5) 0.2 + 0.1 + 0.05 x 0.6 = 0.33; equal scores in row order (run p:N starts at row 6(N-1)).
    row = found.row_of(*ps.ANCHOR)
    anchor = similar.Anchor.of(found, row)
    no_text = np.zeros(found.n_rows, dtype=np.float32)
    everyone = np.ones(len(found.runs), dtype=bool)
    best = similar._scan(anchor, found, no_text, row, everyone, True, 6)
    assert list(best.rows) == [10, 16, 22, 28, 34, 2]
    assert np.allclose(best.scores, [0.35] * 5 + [0.33])
    in_b = found.run_mask({"backbone": ["B"]})
    assert list(in_b) == [False, False, False, True, True, True]
    assert list(similar._scan(anchor, found, no_text, row, in_b, False, 2).rows) == [22, 28]


def test_equal_scores_at_the_cut_go_to_the_lower_rows(found, query):
    # Only p:2 and p:5 share the anchor's words (the others' words it has, "the", "of", are in
    # every step: idf 0). Asked for 4, the other two are the step 4s of p:3 and p:4 (0.35 each,
    # features only); p:6's equal step 4 is a later row.
    result = similar.similar_steps(found, query, *ps.ANCHOR, k=4)
    assert _keys(result.neighbours) == [ps.DUPLICATE, ps.B_DUPLICATE, ("p:3", 4), ("p:4", 4)]
    assert list(result.neighbours["similarity"].iloc[2:]) == [0.35, 0.35]


def test_the_compiled_postings_loop_adds_each_posting_once():
    from auditatlas.patterns.kernels import add_postings

    # Column 0 holds rows 1 and 3 (0.5, 0.25), column 1 row 0 (1.0); the shard starts at row 1.
    scores = np.zeros(5, dtype=np.float32)
    add_postings(scores, 1, np.array([0, 2, 3]), np.array([1, 3, 0], dtype=np.int32),
                 np.array([0.5, 0.25, 1.0], dtype=np.float32), np.array([0, 1]), np.array([2.0, 4.0], dtype=np.float32))
    assert list(scores) == [0.0, 4.0, 1.0, 0.0, 0.5]


def test_a_store_without_steps_is_left_to_the_page_not_an_error(tmp_path):
    """CatchBench alone holds no step: a write's keep builds empty vectors and clusters nothing,
    where it used to stop on scikit-learn's StopIteration (its hasher on no document)."""
    from auditatlas.ingest import ingest
    from auditatlas.patterns import clusters, text
    from queries import runner

    assert text.counts([]).shape == (0, text.N_FEATURES)
    root = tmp_path / "store"
    ingest("catchbench", None, root)
    clusters.keep_default(root, runner(root))  # raises nothing


def test_clusters_fitted_on_a_sample_assign_every_step_to_its_nearest_centre(tmp_path, monkeypatch):
    """Above FIT_ROWS the clusters are fitted on a seeded sample and every step assigned a chunk
    at a time: each step's cluster must be the nearest centre in the whole space (computed
    here with scikit-learn's euclidean_distances on the full matrix), and its distance that
    distance; at or below FIT_ROWS the fit is the one on every step."""
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.metrics.pairwise import euclidean_distances

    from auditatlas.detectors.registry import seeded_subsample
    from auditatlas.ingest.demo import build_demo
    from auditatlas.patterns import clusters, vectors

    root = tmp_path / "store"
    build_demo(root, rooms=60, seed=0)
    query = queries.runner(root)
    found = vectors.load(root, query)
    rows, _ = clusters.anomalous_rows(found, query, {})
    monkeypatch.setattr(clusters, "FIT_ROWS", len(rows) // 2)
    monkeypatch.setattr(clusters, "ASSIGN_ROWS", 17)
    number, distance = clusters.fit_sample(found, rows, 0, 5)

    whole = clusters.space(found, rows)  # every word of every step: the whole space
    sample = rows[seeded_subsample(np.arange(len(rows)), len(rows) // 2, 0)]
    centres_model = MiniBatchKMeans(n_clusters=5, random_state=0, n_init=3, batch_size=4096, max_iter=100,
                                    reassignment_ratio=0.01).fit(clusters.space(found, sample))
    used = np.unique(found.text_rows(sample).indices)
    every_word = np.unique(found.text_rows(rows).indices)
    centres = np.zeros((5, whole.shape[1]))
    keep = np.searchsorted(every_word, used)
    centres[:, keep] = centres_model.cluster_centers_[:, :len(used)]
    centres[:, len(every_word):] = centres_model.cluster_centers_[:, len(used):]
    to_centres = euclidean_distances(whole, centres)
    nearest = to_centres.argmin(axis=1)
    # The same partition (numbers aside), and each step's distance to its own centre.
    pairs = set(zip(number.tolist(), nearest.tolist()))
    assert len(pairs) == len(set(number.tolist()))
    np.testing.assert_allclose(distance, to_centres[np.arange(len(rows)), nearest], rtol=1e-4, atol=1e-5)
    assert sorted(np.bincount(number)[1:], reverse=True) == np.bincount(number)[1:].tolist()  # 1 = largest


def test_the_clusters_line_says_what_the_centres_were_fitted_on(monkeypatch):
    from types import SimpleNamespace

    from auditatlas.views import patterns_view

    result = SimpleNamespace(members=pd.DataFrame({"run_id": ["a"] * 30}), source="labeled anomalies",
                             clusters=[1, 2], seed=0)
    assert patterns_view.clusters_line(result).sentence == "30 labeled anomalies in 2 clusters (seed 0)."
    monkeypatch.setattr(clusters, "FIT_ROWS", 10)
    assert patterns_view.clusters_line(result).sentence == (
        "30 labeled anomalies in 2 clusters (seed 0): the centres were fitted on a seeded sample of 10 of them, and "
        "every one is in the cluster of its nearest centre.")


def test_vectors_read_a_few_runs_at_a_time_are_the_vectors_of_one_read(root, query, tmp_path, monkeypatch):
    """Each batch's read is bounded by its first and last run id and numbers its runs from its
    first position: four runs then two give every step the row, run and features of one read."""
    whole, batched = tmp_path / "whole", tmp_path / "batched"
    build.build(query, whole)
    monkeypatch.setattr(build, "BATCH_RUNS", 4)
    build.build(query, batched)
    shards = [json.loads((folder / build.DONE).read_text())["shards"] for folder in (whole, batched)]
    assert shards == [[[0, 36]], [[0, 24], [24, 36]]]
    for name in build.FEATURES:
        np.testing.assert_array_equal(np.load(batched / f"{name}.npy"), np.load(whole / f"{name}.npy"), err_msg=name)
    assert np.load(whole / "run_pos.npy").tolist() == [r for r in range(6) for _ in range(6)]  # six runs of six steps
    assert np.load(whole / "step_idx.npy").tolist() == list(range(6)) * 6


def test_a_steps_counts_are_its_input_and_output_hashed_as_one_text():
    """Each distinct text is hashed once and the input's and output's counts added: exactly the
    sublinear counts of scikit-learn's hasher on the two texts joined, repeats included."""
    from sklearn.feature_extraction.text import HashingVectorizer

    from auditatlas.patterns import text

    inputs = ["open the drawer", "open the drawer", "Read the NOTE note_p1", "", "open the drawer"]
    outputs = ["drawer is locked", "the drawer opened", "note says open the drawer", "nothing", "drawer is locked"]
    hashed = HashingVectorizer(n_features=text.N_FEATURES, token_pattern=text.TOKEN_PATTERN, lowercase=True,
                               alternate_sign=False, norm=None, dtype=np.float32)
    expected = hashed.transform([a + "\n" + b for a, b in zip(inputs, outputs)]).tocsr()
    expected.sum_duplicates()
    expected.data = 1.0 + np.log(expected.data)
    got = text.counts(inputs, pd.Series(outputs))
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.data, expected.data)
    assert got[1].nnz == 4 and got[0, hashed.transform(["drawer"]).indices[0]] == np.float32(1 + np.log(2))


def test_words_split_by_arrow_hash_as_scikit_learn_tokenizes_them():
    """Each distinct word is hashed once after Arrow splits ASCII texts into the token pattern's
    words; texts with other characters go through scikit-learn whole. The matrix must be
    scikit-learn's for any mix: digits and underscores inside words, one-letter words, case,
    punctuation, empty texts, Unicode letters and spaces, repeated words."""
    from sklearn.feature_extraction.text import HashingVectorizer

    from auditatlas.patterns import text

    texts = ["", "a", "ab", "Ab CD ab", "room_0042 note_p1 101 x1y _ab ab_", "don't stop-me now!",
             "naïve café DÉJÀ vu", "tab\tnew\nline\r\nend", "ÀB cd", "x__y __ab__ ab", "İstanbul ǅungla",
             "ab\u00a0cd", "ab\u2028cd", "ABC123 abc abc ABC", "ﬁne straße STRASSE", "ab-cd_ef gh.ij",
             "the drawer the drawer THE", "Read the NOTE note_p1"]
    reference = HashingVectorizer(n_features=text.N_FEATURES, token_pattern=text.TOKEN_PATTERN, lowercase=True,
                                  alternate_sign=False, norm=None, dtype=np.float32)
    for batch in (texts, texts[:5], [t for t in texts if t.isascii()], [t for t in texts if not t.isascii()], []):
        got = text.hashed(batch)
        assert got.shape == (len(batch), text.N_FEATURES)
        if not batch:
            continue
        expected = reference.transform(batch).tocsr()
        expected.sum_duplicates()
        np.testing.assert_array_equal(got.indptr, expected.indptr)
        np.testing.assert_array_equal(got.indices, expected.indices)
        np.testing.assert_array_equal(got.data, expected.data)
