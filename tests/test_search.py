"""Search (auditatlas/search, queries/search.py) on a hand-made corpus with known answers.

Corpus ``s``: run ``s:a`` (backbone X) and ``s:b`` (backbone Y).

====  =======  ======  ============================  ======================================  =====
step  agent    action  input                         output                                  label
====  =======  ======  ============================  ======================================  =====
a0    Planner  PLAN    plan the compass route        route planned                           0
a1    Coder    CODE    write code                    timeout error timeout error timeout     1
a2    Coder    CODE    retry                         timeout once then fine and more words   0
b0    Planner  PLAN    north compass bearing         points north                            0
b1    Tester   TEST    run tests                     north pole error                        1
====  =======  ======  ============================  ======================================  =====

BM25 on "timeout": a1 holds it three times in five words, a2 once in seven: a1 ranks first.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from auditatlas import store
from auditatlas.search import QueryTextError, SearchRequest, search
from cli_support import run_cli

ROWS = [
    ("s:a", 0, "Planner", "PLAN", "plan the compass route", "route planned", 0),
    ("s:a", 1, "Coder", "CODE", "write code", "timeout error timeout error timeout", 1),
    ("s:a", 2, "Coder", "CODE", "retry", "timeout once then fine and more words", 0),
    ("s:b", 0, "Planner", "PLAN", "north compass bearing", "points north", 0),
    ("s:b", 1, "Tester", "TEST", "run tests", "north pole error", 1),
]


def _write(root: Path, rows=ROWS, source: str = "traces") -> None:
    runs = sorted({r[0] for r in rows})
    store.write_source(root, source, {
        "corpora": [{"corpus": "s", "title": "s", "kind": "real", "label_process": "hand-made"}] if source == "traces" else [],
        "runs": [{"run_id": r, "corpus": "s", "backbone": "X" if r == "s:a" else "Y", "outcome": "failure",
                  "n_steps": sum(1 for x in rows if x[0] == r)} for r in runs],
        "steps": [{"run_id": r, "corpus": "s", "step_idx": i, "agent": ag, "action": ac, "text_in": ti, "text_out": to,
                   "label": lab} for r, i, ag, ac, ti, to, lab in rows]})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import queries
    from queries.search import index_for

    root = tmp_path_factory.mktemp("search") / "store"
    _write(root)
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
    _write(root)
    assert keeper(root).choice(wait=True).index is not None
    _write(root, [("s:z", 0, "Coder", "CODE", "zebra crossing", "done", 0)], source="more")
    first = keeper(root).choice(wait=False)
    assert first.index is None and "being built" in first.unavailable
    scanned = search(SearchRequest("zebra"), None, queries.runner(root), first.unavailable)
    assert [(h.run_id, h.step_idx) for h in scanned.hits] == [("s:z", 0)] and not scanned.ranked
    deadline = time.monotonic() + 30
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
