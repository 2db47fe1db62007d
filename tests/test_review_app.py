"""The review page (AppTest on the hand-made store of review_store.py): the queue the link
asks for, a verdict given with the button, stored, and the next step opened."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import queries
import review_store
from app_support import open_page, page_texts


@pytest.fixture()
def root(tmp_path, monkeypatch) -> Path:
    # AppTest makes Streamlit's page manager anew on every run, so the guard of
    # components.shell reruns every script once, and a button's click is lost on that rerun
    # (a real server flips the flag once per process). The app's own navigation is in charge
    # here anyway (open_page runs app.py).
    monkeypatch.setattr("components.shell.ensure_app_navigation", lambda: None)
    return review_store.build(tmp_path / "store")


def _plain(text: str) -> str:
    return text.replace("\\", "").replace("\u2060", "").replace("**", "")


def test_a_verdict_is_stored_and_the_next_step_opens(root, monkeypatch):
    at = open_page(root, monkeypatch, "pages/review.py", queue="doubt", reviewer="ann <b>x</b>")
    texts = _plain(page_texts(at))
    # The doubt order's first step (review_store.DOUBT_ORDER), and how the order is defined.
    assert "Step 1 of 5" in texts and "Run b, step 3" in texts and "run id r:b" in texts
    assert "4 of the 4 label-free prediction set(s) scoring this step contradict its label" in texts
    assert "top decile" in texts and "Released label: anomaly" in texts
    at.text_input(key="review_failure_mode").input("wrong <i>tool</i>")
    at.text_area(key="review_note").input("*not* a failure")
    at.button(key="review_normal").click().run()
    assert not at.exception, at.exception
    history = queries.run("review_history", root=root)
    assert history[["run_id", "step_idx", "verdict", "reviewer", "failure_mode", "note", "queue"]].values.tolist() == [
        ["r:b", 3, "normal", "ann <b>x</b>", "wrong <i>tool</i>", "*not* a failure", "doubt"]]
    texts = _plain(page_texts(at))
    assert "Step 2 of 5" in texts and "Run a, step 1" in texts  # the next step, at once
    assert at.query_params["position"] == "1"


def test_the_random_order_says_it_alone_estimates_an_error_rate(root, monkeypatch):
    at = open_page(root, monkeypatch, "pages/review.py", queue="random", seed="3", position="7")
    texts = _plain(page_texts(at))
    assert "the only order from which an error rate of the released labels may be estimated" in texts
    assert "Step 8 of 8" in texts
    at.button(key="review_anomaly").click().run()  # no reviewer name yet: nothing written
    assert "Give your name under Reviewer first" in _plain(page_texts(at))
    assert queries.run("review_history", root=root).empty


def test_the_agreement_section_shows_kappa_and_says_what_is_missing(tmp_path, monkeypatch):
    """Below the queue (here: the judges order, empty on this store, saying why in one sentence)."""
    import agreement_store
    from auditatlas import verdicts

    monkeypatch.setattr("components.shell.ensure_app_navigation", lambda: None)
    store = agreement_store.build(tmp_path / "agreement")
    verdicts.append_verdicts(store, agreement_store.rows())
    at = open_page(store, monkeypatch, "pages/review.py", queue="judges")
    texts = _plain(page_texts(at))
    assert "The store holds no Who&When corpus" in texts
    assert "Agreement" in texts and "No verdict in this slice was given in the random order" in texts
    pairs = next(df.value for df in at.dataframe if "other reviewer" in df.value.columns)
    pairs = pairs.set_index(["reviewer", "other reviewer"])
    assert pairs.loc[("ann", "bob"), "kappa"] == 0.583  # agreement_store: 0.28 / 0.48, by hand
    assert pd.isna(pairs.loc[("ann", "cy"), "kappa"])  # a blank cell beside its note, never a number
    assert pairs.loc[("ann", "cy"), "note"].startswith("Kappa is undefined for ann and cy")
    confusion = next(df.value for df in at.dataframe if "reviewed unsure" in df.value.columns)
    assert confusion.values.tolist()[-1] == ["verifier", "normal", 1, 4, 1]


def test_the_judges_order_says_how_many_judges_went_against_the_human(tmp_path, monkeypatch):
    import agreement_store

    monkeypatch.setattr("components.shell.ensure_app_navigation", lambda: None)
    store = agreement_store.build_whowhen_like(tmp_path / "ww")
    at = open_page(store, monkeypatch, "pages/review.py", queue="judges")
    texts = _plain(page_texts(at))
    # agreement_store.build_whowhen_like: ww:1 first, 3 of 3 judges against step 2, 2 of them on step 3.
    assert "Step 1 of 2" in texts and "Run 1, step 2" in texts and "run id ww:1" in texts
    assert ("3 of the 3 LLM judge(s) with a pick on this run picked another step than this one, the human decisive "
            "step; 2 of them picked step 3 (1 abstained).") in texts


def _switch(at, page: str):
    """To ``page`` as the sidebar takes the reader there: Streamlit clears the URL's parameters."""
    for name in list(at.query_params):
        del at.query_params[name]
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def test_back_through_the_navigation_the_review_is_where_the_reader_left_it(root, monkeypatch):
    at = open_page(root, monkeypatch, "pages/review.py", queue="random", seed="3", position="2")
    assert "Step 3 of 8" in _plain(page_texts(at))
    _switch(at, "pages/tour.py")
    assert "Step 3 of" not in _plain(page_texts(at))
    _switch(at, "pages/review.py")
    assert "Step 3 of 8" in _plain(page_texts(at))
    assert (at.query_params["queue"], at.query_params["seed"], at.query_params["position"]) == ("random", "3", "2")
    # The page's own link while on it opens what it says: the default view (the doubt order).
    _switch(at, "pages/review.py")
    assert "Step 1 of 5" in _plain(page_texts(at))


def test_the_queue_is_computed_once_per_store_version_and_shared(root, monkeypatch):
    """Every step of a review session, and every session, reads one queue: a verdict leaves it
    as it is (the orders question the released labels); a write to the data makes a new one.
    At a million rooms computing the doubt order again on each step took 15 s a step."""
    from auditatlas import verdicts
    from auditatlas.analyses import review_queue
    from components import cached

    monkeypatch.setenv("AUDITATLAS_STORE", str(root))
    cached._review_queue.clear()
    computed = []
    real = review_queue.queue
    monkeypatch.setattr(review_queue, "queue", lambda *a, **k: computed.append(a[1]) or real(*a, **k))
    first, _ = cached.review_queue("doubt", None, 0, supervised=True)
    assert list(zip(first["run_id"], first["step_idx"])) == review_store.DOUBT_ORDER
    again, _ = cached.review_queue("doubt", None, 0, supervised=True)
    assert again is first and computed == ["doubt"]
    verdicts.append_verdicts(root, [verdicts.verdict("c", "r:b", 3, "normal", "ann")])
    assert cached.review_queue("doubt", None, 0, supervised=True)[0] is first and computed == ["doubt"]
    # Another order, or the data written again (a new version of the same sources): computed anew.
    cached.review_queue("random", None, 0, supervised=False)
    review_store.build(root)
    assert cached.review_queue("doubt", None, 0, supervised=True)[0] is not first
    assert computed == ["doubt", "random", "doubt"]


def test_a_write_keeps_the_doubt_order_and_the_page_reads_it(tmp_path, monkeypatch):
    """The whole store's doubt order is kept by the write beside the half it rests on (at a
    million rooms its join took seconds on every new server's first /review); the page reads it
    without ordering again. Here the half is left out (a tiny corpus), and its note is kept too."""
    from auditatlas.after_write import keep
    from auditatlas.analyses import review_queue
    from components import cached
    from queries import kept

    root = review_store.build(tmp_path / "store")
    monkeypatch.setenv("AUDITATLAS_KEEP_BOARDS", "1")
    keep(root, print, only="label doubt")
    keep(root, print, only="the doubt order")  # a part of its own (its own process at scale)
    order, notes = kept.read_frame(root, kept.version_key(root), review_queue.KEPT_DOUBT_ORDER)
    assert list(zip(order["run_id"], order["step_idx"])) == review_store.DOUBT_ORDER
    assert len(notes) == 1 and "left out on corpus 'r'" in notes[0]
    computed = []
    real = review_queue.queue
    monkeypatch.setattr(review_queue, "queue", lambda *a, **k: computed.append(a[1]) or real(*a, **k))
    monkeypatch.setenv("AUDITATLAS_STORE", str(root))
    cached._review_queue.clear()
    queue, page_notes = cached.review_queue("doubt", None, 0, supervised=True)
    assert list(zip(queue["run_id"], queue["step_idx"])) == review_store.DOUBT_ORDER and page_notes == notes
    assert computed == []  # read, not ordered again
    cached.review_queue("doubt", {"backbone": ["Y"]}, 0, supervised=True)
    assert computed == ["doubt"]  # a slice is ordered where it is asked for
