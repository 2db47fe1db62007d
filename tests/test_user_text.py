"""No sentence a user reads names a development path or tool: every page and tab
the views declare, rendered by AppTest on the app store, and the command line's help and
error messages. Each page, as it opens, also leads with its one badge (the simulated corpus
named, the labels its numbers read): the same opened page serves both reads.

What is read is each element's whole message (texts, labels, help, placeholders, table cells,
column configs), so a path in any of them is caught. The store's own folder is the user's and
may be named; it is taken out first (the tests' store lives in a temporary folder).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from app_support import badge_texts, open_page
from auditatlas.views.pages import PAGES
from cli_support import run_cli

# Words that mean something only inside this workspace or its tooling.
DEVELOPMENT = re.compile(r"\.\./shared|/tmp\b|/work\b|\.venv|\bpytest\b|site-packages|conftest|tests/fixtures"
                         r"|/home/|Traceback", re.I)


def _page_file(path: str) -> str:
    return f"pages/{path.strip('/') or 'overview'}.py"


def _views() -> list[tuple[str, dict]]:
    """Every page as it opens, and each of its declared tabs."""
    views = []
    for page in PAGES:
        tab = next((f for f in page.fields if f.name == "tab"), None)
        views.append((_page_file(page.path), {}))
        views += [(_page_file(page.path), {"tab": choice}) for choice in (tab.choices if tab else ())[1:]]
    return views


def _messages(node) -> Iterator[str]:
    """Every element's message under ``node``, as protobuf text (strings and table bytes alike)."""
    proto = getattr(node, "proto", None)
    if proto is not None:
        yield str(proto)
    for child in getattr(node, "children", {}).values():
        yield from _messages(child)


def _leaks(text: str, own: list[str]) -> list[str]:
    for path in own:
        text = text.replace(path, "<store>")
    return sorted({text[max(m.start() - 60, 0): m.end() + 60] for m in DEVELOPMENT.finditer(text)})


def _first_run(store: Path) -> str:
    import queries

    return str(queries.run("explorer_runs", {
        "slice": {}, "run_q": "", "run_pattern": "%", "f_corpus": [], "f_backbone": [], "f_difficulty": [],
        "f_outcome": [], "min_steps": None, "max_steps": None, "min_anomalous": None, "max_anomalous": None,
        "min_chain": None, "max_chain": None, "sort": "run", "descending": False, "limit": 1, "offset": 0},
        root=store)["run"].iloc[0])


BADGED = {_page_file(p.path) for p in PAGES if p.badge}


@pytest.mark.parametrize("page, params", _views(), ids=lambda v: str(v))
def test_no_page_names_a_development_path(app_store, monkeypatch, page, params):
    at = open_page(app_store, monkeypatch, page, **params)
    text = "\n".join(_messages(at._tree))
    assert len(text) > 500  # the page said something
    assert _leaks(text, [str(app_store), str(app_store.resolve())]) == []
    if page in BADGED and not params:
        _leads_with_its_badge(at)


def _leads_with_its_badge(at) -> None:
    """The page's first element is its one badge (drawn by app.py before the page, so nothing of
    the page can come above it; tests/test_tasks_browser.py measures it in the first screen of a
    real browser): the app store's simulated corpus named, the released labels read."""
    first = next(iter(at.main.children.values()))
    assert getattr(first, "key", None) == "page-badge", first
    badges = [child for child in at.main.children.values() if getattr(child, "key", None) == "page-badge"]
    assert len(badges) == 1
    texts = badge_texts(at)
    assert any(t.startswith("Simulated data: maadbench-sim") for t in texts), texts
    assert any(t.startswith("Labels: released") for t in texts), texts


def test_the_declared_pages_with_a_badge_are_the_slices_pages():
    """Which pages wear the badge is read from the declarations; these five at least show the
    sidebar slice's numbers (a declaration that dropped its badge would pass the test above)."""
    assert {"pages/overview.py", "pages/boards.py", "pages/explorer.py", "pages/search.py", "pages/review.py"} <= BADGED


@pytest.mark.parametrize("params", [{"open": "run"}, {"q": "compass"}, {"run": "no-such:run"}])
def test_explorer_views_name_no_development_path(app_store, monkeypatch, params):
    if params.get("open"):
        params = {"run": _first_run(app_store), "step": "1"}
    at = open_page(app_store, monkeypatch, "pages/explorer.py", **params)
    assert _leaks("\n".join(_messages(at._tree)), [str(app_store), str(app_store.resolve())]) == []


# The command line, run where a user would: the store and every path are relative to it.
CLI_CALLS = [
    ("--help",), ("ingest", "--help"), ("demo", "--help"), ("remove", "--help"), ("info", "--help"),
    ("board", "--help"), ("score", "--help"), ("cross-backbone", "--help"), ("detectors", "--help"),
    ("info",), ("detectors",),
    ("ingest", "whowhen"), ("ingest", "whowhen", "no-such-folder"), ("ingest", "parquet", "x"),
    ("board", "nope"), ("remove", "no-such-source"), ("demo", "--rooms", "0"), ("score", "--detector", "nope"),
]


@pytest.mark.parametrize("args", CLI_CALLS, ids=" ".join)
def test_cli_messages_name_no_development_path(tmp_path, args):
    done = run_cli("--store", "store", *args, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert said.strip()  # every call says something
    assert _leaks(said, [str(tmp_path)]) == []
