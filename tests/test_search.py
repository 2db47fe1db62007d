"""Search (auditatlas/search, queries/search.py) on a hand-made corpus with known answers
(tests/search_corpus.py: its table, and why BM25 ranks a1 first).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from auditatlas.search.answer import SearchRequest, search
from auditatlas.search.parse import QueryTextError
from cli_support import run_cli
from search_corpus import write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import queries
    from queries.search import index_for

    root = tmp_path_factory.mktemp("search") / "store"
    write_corpus(root)
    choice = index_for(root, wait=True)
    assert choice.index is not None, choice.unavailable
    return root, choice.index, queries.runner(root)


def _steps(corpus, text, **kw):
    root, index, query = corpus
    answer = search(SearchRequest(text, **kw), index, query)
    return [(h.run_id, h.step_idx) for h in answer.hits]


def test_bm25_ranks_the_step_saying_it_more_often_first(corpus):
    assert _steps(corpus, "timeout") == [("s:a", 1), ("s:a", 2)]


def test_phrase_against_words(corpus):
    assert sorted(_steps(corpus, "compass north")) == [("s:b", 0)]  # both words, any order
    assert _steps(corpus, '"north compass"') == [("s:b", 0)]
    assert _steps(corpus, '"compass north"') == []
    assert sorted(_steps(corpus, "compass")) == [("s:a", 0), ("s:b", 0)]


def test_boolean_operators(corpus):
    assert sorted(_steps(corpus, "timeout OR pole")) == [("s:a", 1), ("s:a", 2), ("s:b", 1)]
    assert _steps(corpus, "compass AND NOT north") == [("s:a", 0)]
    assert _steps(corpus, "compass -north") == [("s:a", 0)]
    assert _steps(corpus, "north AND error") == [("s:b", 1)]


def test_field_filters(corpus):
    assert sorted(_steps(corpus, "agent:coder")) == [("s:a", 1), ("s:a", 2)]
    assert _steps(corpus, "action:test") == [("s:b", 1)]
    assert _steps(corpus, "agent:planner AND north") == [("s:b", 0)]


def test_slice_and_label_restrict_the_hits(corpus):
    assert _steps(corpus, "compass", slice={"backbone": ["Y"]}) == [("s:b", 0)]
    assert sorted(_steps(corpus, "error", label="anomaly")) == [("s:a", 1), ("s:b", 1)]
    assert _steps(corpus, "error", label="normal") == []


def test_snippet_highlights_are_ranges_of_plain_text(corpus):
    root, index, query = corpus
    hit = search(SearchRequest("pole"), index, query).hits[0]
    assert hit.found_in == "output" and hit.snippet == "north pole error"
    assert hit.highlights == ((6, 10),) and hit.marked == "north «pole» error"


def test_paging(corpus):
    root, index, query = corpus
    first = search(SearchRequest("timeout", page_size=1), index, query)
    second = search(SearchRequest("timeout", page=2, page_size=1), index, query)
    assert first.total == second.total == 2 and first.pages == 2
    assert [(h.run_id, h.step_idx) for h in first.hits + second.hits] == [("s:a", 1), ("s:a", 2)]


@pytest.mark.parametrize("text, sentence", [
    ('"unclosed', "The query cannot be read at character 1: the quote opened there is never closed"),
    ("foo:bar", "The query cannot be read at character 1: there is no field 'foo'"),
    ("compass AND", "The query cannot be read at character 9: AND needs a word or phrase on each side"),
    ("(compass OR north", "The query cannot be read at character 18: a parenthesis opened before is not closed"),
    ("NOT compass", "The query only excludes (NOT or -)"),
])
def test_a_query_the_engine_cannot_read_is_one_sentence_saying_where(corpus, text, sentence):
    root, index, query = corpus
    with pytest.raises(QueryTextError) as caught:
        search(SearchRequest(text), index, query)
    assert str(caught.value).startswith(sentence) and "\n" not in str(caught.value)


def test_an_empty_slice_says_so(corpus):
    root, index, query = corpus
    answer = search(SearchRequest("compass", {"backbone": ["nope"]}), index, query)
    assert answer.total == 0 and answer.note == "This slice holds no steps; widen the filters in the sidebar."


def test_without_an_index_the_text_scan_answers_and_says_so(corpus):
    root, index, query = corpus
    answer = search(SearchRequest("ERROR", label="anomaly"), None, query, "the index is being built")
    assert not answer.ranked and "the index is being built" in answer.note and "unranked" in answer.note
    assert [(h.run_id, h.step_idx, h.score) for h in answer.hits] == [("s:a", 1, None), ("s:b", 1, None)]
    assert answer.hits[1].marked == "north pole «error»"


def test_a_new_store_version_gets_its_own_index_and_the_scan_meanwhile(tmp_path):
    import queries
    from queries.search import keeper

    root = tmp_path / "store"
    write_corpus(root)
    assert keeper(root).choice(wait=True).index is not None
    write_corpus(root, [("s:z", 0, "Coder", "CODE", "zebra crossing", "done", 0)], source="more")
    first = keeper(root).choice(wait=False)
    assert first.index is None and "being built" in first.unavailable
    scanned = search(SearchRequest("zebra"), None, queries.runner(root), first.unavailable)
    assert [(h.run_id, h.step_idx) for h in scanned.hits] == [("s:z", 0)] and not scanned.ranked
    deadline = time.monotonic() + 120  # an upper bound: the background build takes a second here
    while (choice := keeper(root).choice(wait=False)).index is None and time.monotonic() < deadline:
        time.sleep(0.05)
    answer = search(SearchRequest("zebra"), choice.index, queries.runner(root))
    assert answer.ranked and [(h.run_id, h.step_idx) for h in answer.hits] == [("s:z", 0)]
    assert len([p for p in (root / "search").iterdir() if not p.name.startswith(".")]) <= 2


def test_cli_json_gives_the_page_answer(corpus):
    root, index, query = corpus
    done = run_cli("--store", str(root), "search", "north", "--slice", "backbone=Y", "--limit", "1", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    page = search(SearchRequest("north", {"backbone": ["Y"]}, page_size=1), index, query).as_dict()
    assert out == page and out["total"] == 2 and out["ranked"] and len(out["hits"]) == 1
    bad = run_cli("--store", str(root), "search", '"north')
    assert bad.returncode == 1 and bad.stderr.startswith("error: The query cannot be read at character 1")


def test_export_of_the_search_page(corpus):
    from auditatlas.export import export_view

    root, index, query = corpus
    html = export_view(query, root, "/search?q=pole").html
    assert "north «pole» error" in html and "/explorer?run=s%3Ab&amp;step=1" in html


def test_every_key_of_a_step_document_is_an_index_field(corpus):
    # tantivy drops a key that names no field without a word: a misspelt key would leave a
    # field empty in every index, so the documents' keys are checked against the schema.
    import tantivy

    from auditatlas.duck import connect
    from auditatlas.search import fields
    from auditatlas.store import read_manifest
    from queries import views
    from queries.template import text

    root, index, query = corpus
    con = connect()
    views.bind_table(con, root, read_manifest(root), "steps")
    docs = [json.loads(d) for (d,) in con.execute(f"SELECT doc FROM ({text('search_steps')})").fetchall()]
    assert len(docs) == 5
    for doc in docs:
        kept = tantivy.Document.from_dict(doc, fields.schema()).to_dict()
        assert set(doc) == set(kept) == {"input", "output", "agent", "action", "attributes", "cell", "run_id", "step_idx"}


def test_kept_attributes_are_searchable(tmp_path):
    from auditatlas import store
    from queries.search import index_for

    root = tmp_path / "store"
    store.write_source(root, "traces", {
        "corpora": [{"corpus": "t", "title": "t", "kind": "real", "label_process": "hand-made"}],
        "runs": [{"run_id": "t:1", "corpus": "t", "backbone": "X", "outcome": "failure", "n_steps": 2}],
        "steps": [{"run_id": "t:1", "corpus": "t", "step_idx": 0, "agent": "A", "action": "CALL", "text_in": "call the tool",
                   "text_out": "no answer", "error_code": "E_DISK_FULL", "failure_mode": "F7", "extra": '{"tool": "grepper"}'},
                  {"run_id": "t:1", "corpus": "t", "step_idx": 1, "agent": "A", "action": "CALL", "text_in": "again",
                   "text_out": "fine"}]})
    index = index_for(root, wait=True).index
    import queries
    for word in ("e_disk_full", "F7", "grepper"):
        hits = search(SearchRequest(word), index, queries.runner(root)).hits
        assert [(h.run_id, h.step_idx, h.found_in) for h in hits] == [("t:1", 0, "another field")]


def test_the_index_key_follows_the_sources_that_hold_steps():
    from auditatlas.search.index import index_key

    traces = {"dir": "sources/traces-aaa", "rows": {"steps": 5, "runs": 2}}
    base = {"sources": {"traces": traces}}
    rescored = {"sources": {"traces": traces, "rescore": {"dir": "sources/rescore-bbb", "rows": {"steps": 0, "predictions": 9}}}}
    rewritten = {"sources": {"traces": {**traces, "dir": "sources/traces-ccc"}}}
    more = {"sources": {"traces": traces, "more": {"dir": "sources/more-ddd", "rows": {"steps": 1}}}}
    assert index_key(rescored) == index_key(base)  # a write without steps keeps the index
    assert len({index_key(base), index_key(rewritten), index_key(more)}) == 3


def test_one_build_per_index_across_sessions_and_processes(tmp_path, monkeypatch):
    import queries.search as qs
    from auditatlas import leases
    from auditatlas.search import index as search_index
    from auditatlas.store import read_manifest

    root = tmp_path / "store"
    write_corpus(root)
    started = []

    class Running:  # a build process that has not ended
        returncode = None

        def poll(self):
            return None

    monkeypatch.setattr(qs, "start_build", lambda r: started.append(r) or (Running(), tmp_path / "errors.log"))
    key = search_index.index_key(read_manifest(root))
    scratch = search_index.home(root) / f"{search_index.SCRATCH_PREFIX}{key}"
    scratch.mkdir(parents=True)
    other = leases.hold(scratch)  # another process is building this very index
    keeper = qs.Keeper(root)
    assert keeper.choice(wait=False).unavailable == qs.BEING_BUILT and started == []
    with pytest.raises(search_index.Busy):  # and a build process started anyway gives way to it
        qs.build_index(root)
    other.release()
    assert keeper.choice(wait=False).unavailable == qs.BEING_BUILT and started == [root]
    assert keeper.choice(wait=False).unavailable == qs.BEING_BUILT and started == [root]  # its own is on the way


def test_a_failed_build_process_is_said_and_the_scan_answers(tmp_path, monkeypatch):
    import queries.search as qs

    root = tmp_path / "store"
    write_corpus(root)
    errors = tmp_path / "errors.log"
    errors.write_text("error: Out of Memory Error: could not allocate block\n")

    class Failed:
        returncode = 1

        def poll(self):
            return 1

    monkeypatch.setattr(qs, "start_build", lambda r: (Failed(), errors))
    keeper = qs.Keeper(root)
    assert keeper.choice(wait=False).unavailable == qs.BEING_BUILT
    again = keeper.choice(wait=False)
    assert again.index is None and again.unavailable == (
        "the index of this store version could not be built: Out of Memory Error: could not allocate block")


def test_a_write_through_the_cli_builds_the_index_of_its_version(tmp_path):
    from auditatlas.search.index import built_folder

    root = tmp_path / "store"
    fixtures = Path(__file__).resolve().parent / "fixtures" / "whowhen"
    done = run_cli("--store", str(root), "ingest", "whowhen", str(fixtures), "--workers", "0")
    assert done.returncode == 0, done.stderr
    assert built_folder(root) is not None and "search index could not be built" not in done.stderr
