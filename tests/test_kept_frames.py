"""Tables kept per store version (queries.kept.remember_frame) and the supervised half of label
doubt kept with them (analyses.label_doubt.kept_supervised_doubt, a CLI write's _keep_boards through auditatlas.kept_views):
computed once per version, read back as written, never for a slice or another version; and a
write's step vectors and default clusters. The fit, the vectors and the clustering are replaced
by stubs that record their calls (their own tests are tests/test_review_* and test_patterns)."""
from __future__ import annotations

from functools import partial

import pandas as pd
import pytest

from auditatlas.analyses import label_doubt
from queries import kept

FRAME = pd.DataFrame({"corpus": ["c", "c"], "run_id": ["c:r1", "c:r2"], "step_idx": [0, 3],
                      "self_confidence": [0.25, 0.875], "label_issue": [True, False]})


@pytest.fixture
def version(monkeypatch):
    """The store's version key, set by the test (no manifest needed)."""
    key = {"now": "v1"}
    monkeypatch.setattr(kept, "version_key", lambda root: key["now"])
    return key


@pytest.fixture
def fits(monkeypatch) -> list[dict]:
    """Every call of the supervised fit, by slice; it answers FRAME and one note."""
    calls: list[dict] = []

    def fit(query, root, slice_):
        calls.append(dict(slice_ or {}))
        return label_doubt.SupervisedDoubt(FRAME.copy(), ["left out on corpus 'x': too small"])

    monkeypatch.setattr(label_doubt, "supervised_doubt", fit)
    return calls


def test_a_table_is_computed_once_per_version_and_read_back_whole(tmp_path, version):
    computed = []

    def compute():
        computed.append(1)
        return FRAME, {"notes": ["a"]}

    first = kept.remember_frame(tmp_path, "t", compute)
    again = kept.remember_frame(tmp_path, "t", compute)
    assert (first[2], again[2]) == (False, True) and len(computed) == 1
    pd.testing.assert_frame_equal(again[0], FRAME)
    assert again[1] == {"notes": ["a"]}
    version["now"] = "v2"
    assert kept.remember_frame(tmp_path, "t", compute)[2] is False and len(computed) == 2


def test_a_truncated_table_is_computed_and_written_again(tmp_path, version):
    kept.remember_frame(tmp_path, "t", lambda: (FRAME, []))
    path = kept.home(tmp_path) / "v1" / kept.frame_file_name("t")
    path.write_bytes(path.read_bytes()[:40])
    frame, _, read = kept.remember_frame(tmp_path, "t", lambda: (FRAME.head(1), []))
    assert read is False and len(frame) == 1
    assert len(kept.remember_frame(tmp_path, "t", lambda: (FRAME, []))[0]) == 1  # the rewritten one


def test_the_whole_stores_doubt_is_kept_a_slices_is_not(tmp_path, version, fits):
    remember = partial(kept.remember_frame, tmp_path)
    for labels in ("released", "reviewed"):  # the half reads the released labels either way
        half = label_doubt.kept_supervised_doubt(None, tmp_path, {"labels": labels}, remember)
        pd.testing.assert_frame_equal(half.steps, FRAME)
        assert half.notes == ["left out on corpus 'x': too small"]
    assert len(fits) == 1
    for _ in range(2):
        label_doubt.kept_supervised_doubt(None, tmp_path, {"backbone": ["GPT-4.1"]}, remember)
    assert len(fits) == 3
    assert [p.name for p in (kept.home(tmp_path) / "v1").iterdir()] == [kept.frame_file_name(label_doubt.KEPT_NAME)]


def test_a_cli_write_keeps_the_doubt_for_the_first_review(tmp_path, version, fits, monkeypatch):
    from auditatlas.after_write import keep

    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    monkeypatch.setattr("auditatlas.analyses.board_kept.keep_all", lambda query, remember: [])
    keep(tmp_path, print)
    assert len(fits) == 1
    hit = kept.read_frame(tmp_path, "v1", label_doubt.KEPT_NAME)
    assert hit is not None and list(hit[0]["run_id"]) == ["c:r1", "c:r2"]
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "0")
    version["now"] = "v2"
    keep(tmp_path, print)
    assert len(fits) == 1


def test_keeping_a_version_again_finds_the_kept_half_and_order_without_reading_their_rows(
        tmp_path, version, fits, monkeypatch):
    """A second keep of one version (``auditatlas warm`` run again) finds the kept half and
    doubt order by their files: read as frames, the half alone was 2.3 GB at a million rooms."""
    from auditatlas.after_write import keep
    from auditatlas.analyses import review_queue

    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    monkeypatch.setattr("auditatlas.analyses.board_kept.keep_all", lambda query, remember, only=None: [])
    monkeypatch.setattr(review_queue, "queue", lambda *a, **k: FRAME)  # the order's query (no store here)
    keep(tmp_path, print)
    reads: list[tuple[str, bool]] = []
    read_frame = kept.read_frame
    monkeypatch.setattr(kept, "read_frame", lambda root, key, name, as_file=False: (
        reads.append((name, as_file)), read_frame(root, key, name, as_file))[1])
    keep(tmp_path, print)
    assert len(fits) == 1
    tables = (review_queue.KEPT_DOUBT_ORDER, label_doubt.KEPT_NAME)
    assert sorted(read for read in reads if read[0] in tables) == sorted((name, True) for name in tables)


def test_a_cli_write_builds_the_step_vectors_and_the_default_clusters(tmp_path, version, fits, monkeypatch):
    from auditatlas.after_write import keep
    from auditatlas.patterns import clusters, vectors

    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    monkeypatch.setattr("auditatlas.analyses.board_kept.keep_all", lambda query, remember, only=None: [])
    built, clustered = [], []
    monkeypatch.setattr(vectors, "load", lambda root, query, progress=None: built.append(root) or "the vectors")
    monkeypatch.setattr(clusters, "anomalous_rows", lambda found, query, slice_: (list(range(50)), "labeled anomalies"))
    monkeypatch.setattr(clusters, "_cached_fit", lambda found, rows, slice_, seed, n, report: clustered.append(
        (found, slice_, seed, n)))
    keep(tmp_path, print)
    assert built == [tmp_path] and clustered == [("the vectors", {}, 0, clusters.DEFAULT_CLUSTERS)]


# --- named queries kept per store version (queries.kept.KEPT_QUERIES) ---------------------------

def test_a_kept_query_is_named_alike_from_the_page_and_the_write_and_only_under_released_labels():
    page = {"slice": {"corpus": [], "backbone": [], "labels": "released"}, "set_ids": ["a"], "by_backbone": True}
    write = {"slice": {}, "set_ids": ["a"], "by_backbone": True}
    assert kept.query_name("grid_means", page) == kept.query_name("grid_means", write) is not None
    assert kept.query_name("grid_means", {**write, "slice": {"backbone": ["X"]}}) is None  # the whole store only
    assert kept.query_name("grid_means", {**write, "set_ids": ["b"]}) != kept.query_name("grid_means", write)
    assert kept.query_name("grid_means", {**write, "slice": {"labels": "reviewed"}}) is None  # reads the verdicts
    assert kept.query_name("grid_errors", write) is None  # not one of KEPT_QUERIES


def _kept_then_recorded(store, keep, names, monkeypatch) -> tuple:
    """``keep`` run on ``store`` through the write's remembering runner (nothing kept before, as
    after a write), one kept file per query of ``names``; then every named query run from here
    on recorded. Returns the version's kept folder and the record."""
    import shutil

    import queries

    shutil.rmtree(kept.home(store), ignore_errors=True)  # pages opened on a shared store keep theirs too
    keep(kept.remembering_runner(store))
    folder = kept.home(store) / kept.version_key(store)
    assert all(len(list(folder.glob(f"query_{name}_*.parquet"))) == 1 for name in names)
    asked: list[str] = []
    run = queries.run
    monkeypatch.setattr(queries, "run", lambda name, params=None, root=None: asked.append(name) or run(name, params, root))
    return folder, asked


def test_the_write_keeps_the_detectors_grid_and_the_page_reads_it(tmp_path, monkeypatch):
    from app_support import open_page, page_texts
    from auditatlas.analyses import detector_comparison
    from stores import copy_of

    store = copy_of("detectors", tmp_path / "store")
    folder, asked = _kept_then_recorded(store, detector_comparison.keep_default_grid, ["grid_means", "grid_cells"],
                                        monkeypatch)
    text = page_texts(open_page(store, monkeypatch, "pages/detectors.py"))
    # The cells and means read from the kept files; the default cell's errors are asked for.
    assert "grid_errors" in asked and not {"grid_cells", "grid_means"} & set(asked), asked
    assert "Per-action ROC-AUC" in text
    # A slice is computed, and not kept.
    page_texts(open_page(store, monkeypatch, "pages/detectors.py", outcome="failure"))
    assert {"grid_means", "grid_cells"} <= set(asked)
    assert len(list(folder.glob("query_grid_means_*.parquet"))) == len(list(folder.glob("query_grid_cells_*.parquet"))) == 1


def test_the_write_keeps_the_rescored_sets_and_the_page_reads_them(tmp_path, monkeypatch):
    """The Re-score page's sets with their test ROC-AUCs (recomputed from the predictions: 5 s
    at a million rooms) and its steps per label (1.6 s there) are kept per store version as the
    page asks for them; the page then reads them and recomputes neither."""
    from app_support import open_page, page_texts
    from auditatlas.detectors import engine
    from auditatlas.views import rescore_view
    from stores import copy_of

    store = copy_of("rescore-app", tmp_path / "store")
    engine.score(store, ["random"], {"corpus": ["maadbench-sim"]}, 1)
    _, asked = _kept_then_recorded(store, rescore_view.keep_default_sets, ["rescore_sets", "step_label_counts"],
                                   monkeypatch)
    text = page_texts(open_page(store, monkeypatch, "pages/rescore.py"))
    # Read from the kept files; the page's judges are asked for.
    assert "judge_sets" in asked and not {"step_label_counts", "rescore_sets"} & set(asked), asked
    assert "1 re-scored set(s) on the slice's corpora" in text


def test_the_write_keeps_the_overviews_counts_and_the_page_reads_them(tmp_path, monkeypatch):
    """The Overview's counts and rates (the counts per corpus scan every prediction) are kept
    per store version as the page asks for them; the page then reads them and runs none of
    their queries, and shows the same tables; a slice is computed."""
    from app_support import open_page, page_texts
    from auditatlas.views import overview_view
    from stores import copy_of

    store = copy_of("rescore-app", tmp_path / "store")
    before = page_texts(open_page(store, monkeypatch, "pages/overview.py"))
    names = ("corpus_counts", "slice_summary", "action_rates", "silent_failures")
    _, asked = _kept_then_recorded(store, overview_view.keep_default, names, monkeypatch)
    assert page_texts(open_page(store, monkeypatch, "pages/overview.py")) == before
    assert not set(names) & set(asked), asked
    page_texts(open_page(store, monkeypatch, "pages/overview.py", backbone="GPT-4.1"))
    assert {"slice_summary", "action_rates", "silent_failures"} <= set(asked)


def test_the_write_keeps_the_explorers_actions_and_the_page_reads_them(tmp_path, monkeypatch):
    """The actions the Explorer's text search offers (a scan of every step) are kept per store
    version; the page then reads them, and a slice still asks."""
    from app_support import open_page
    from auditatlas.views import explorer_view
    from stores import copy_of

    store = copy_of("rescore-app", tmp_path / "store")
    _, asked = _kept_then_recorded(store, explorer_view.keep_default, ["explorer_actions"], monkeypatch)
    at = open_page(store, monkeypatch, "pages/explorer.py", q="clue", action=["SOLVE_CLUE", "NO_SUCH_ACTION"])
    assert "explorer_runs" in asked and "explorer_actions" not in asked, asked
    # The kept list is the scan's: only the action no step takes is said to be left out.
    warned = " ".join(w.value for w in at.warning).replace("\\", "")  # as Markdown shows it
    assert "'NO_SUCH_ACTION'" in warned and "SOLVE_CLUE" not in warned, warned
    open_page(store, monkeypatch, "pages/explorer.py", backbone="GPT-4.1")
    assert "explorer_actions" in asked
