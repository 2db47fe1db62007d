"""AppTest of the Search page (pages/search.py) on the hand-made corpus (tests/search_corpus.py):
hits as text with their Explorer links, a query the engine cannot read, the scan while no index."""
from __future__ import annotations

import pytest

from app_support import open_page, page_texts
from search_corpus import write_corpus


def _plain(markdown: str) -> str:
    """What the reader sees of a sentence the page escaped (components/safe.md)."""
    return markdown.replace("\u2060", "").replace("\\", "")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from queries.search import ensure_built

    root = tmp_path_factory.mktemp("search_app") / "store"
    write_corpus(root)
    assert ensure_built(root) is None
    return root


def test_hits_are_text_with_the_explorer_link_and_a_bad_query_is_one_sentence(indexed, monkeypatch):
    at = open_page(indexed, monkeypatch, "pages/search.py", q="pole OR bearing")
    table = at.dataframe[0].value
    assert sorted((r.run_id, r.step, r.snippet) for r in table.itertuples()) == [
        ("s:b", 0, "north compass «bearing»"), ("s:b", 1, "north «pole» error")]
    links = dict(zip(table["step"], table["open"]))
    assert "/explorer?run=s%3Ab&step=1" in links[1] and "/explorer?run=s%3Ab&step=0" in links[0]
    assert "score" in table.columns and "2 steps match, best first." in page_texts(at)
    at.text_input(key="search_page_q").set_value('"north').run()
    assert not at.exception and not at.dataframe
    assert [_plain(e.value) for e in at.error] == [
        "The query cannot be read at character 1: the quote opened there is never closed; close it or remove it."]


def test_without_an_index_the_page_scans_and_says_so(tmp_path, monkeypatch):
    import queries.search as qs

    root = tmp_path / "store"
    write_corpus(root)
    started = []

    class Running:  # the build process the page starts, still on its way
        returncode = None

        def poll(self):
            return None

    monkeypatch.setattr(qs, "start_build", lambda r: started.append(r) or (Running(), tmp_path / "errors.log"))
    at = open_page(root, monkeypatch, "pages/search.py", q="POLE")
    assert started == [root.resolve()]
    notes = [_plain(i.value) for i in at.info]
    assert any(n.startswith("Ranked search is not available yet (the index of this store version is being built)")
               for n in notes), notes
    table = at.dataframe[0].value
    assert list(table["snippet"]) == ["north «pole» error"] and "score" not in table.columns
    # Text no step holds: the scan says so in one sentence (it once showed nothing at all).
    at.text_input(key="search_page_q").set_value("zebra").run()
    assert [_plain(w.value) for w in at.warning] == [
        "No step's input or output in the slice contains this text as typed."]
