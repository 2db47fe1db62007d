"""The declared view state (auditatlas.views): parse, links, the README table, hostile links.

Expected sentences and URLs are written out by hand; the round trip builds its non-default
values from each field's declared kind and range, then checks the parse gives them back.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from auditatlas.views import EXPLORER, SLICE, Field, explorer_url
from auditatlas.views.pages import DETECTORS, PAGES, PROPAGATION, RESCORE
from auditatlas.views.readme import in_readme, section

REPO = Path(__file__).resolve().parents[1]


def _params(url: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        out.setdefault(key, []).append(value)
    return out


def _other(f: Field):
    """A valid value of ``f`` that is not its default."""
    if f.kind == "str":
        return "a b&c/ü"
    if f.kind == "int":
        return int(f.low or 0) + 2 if f.high is None else int(f.high) - 1
    if f.kind == "float":
        return 0.25 if f.low is None else f.low + 1.5
    if f.kind == "bool":
        return not f.default
    if f.kind == "choice":
        return next(c for c in reversed(f.choices) if c != f.default)
    if f.choices:
        return [c for c in f.choices if c not in (f.default or [])][:2]
    if f.item == "int":
        return [int(f.low or 0) + 1, int(f.low or 0) + 3]
    return ["x y", "z&w"]


def _round_trips():
    """Every page with a non-default value in every field; the explorer twice, since a link
    gives one decision rule (a step count or a score cut)."""
    for page in PAGES:
        values = {f.name: _other(f) for f in page.fields}
        if page is EXPLORER:
            yield page, {**values, "threshold": None}
            yield page, {**values, "top_k": None}
        else:
            yield page, values


@pytest.mark.parametrize("page, values", list(_round_trips()), ids=lambda v: getattr(v, "path", ""))
def test_every_field_round_trips_through_its_link(page, values):
    slice_ = {"backbone": ["GPT-4.1", "GPT-5.4"], "temperature": ["0.0"]}
    url = page.url(slice_, values)
    assert urlsplit(url).path == page.path
    parsed, problems = page.parse(_params(url))
    assert problems == []
    assert parsed == values
    assert {k: v for k, v in _params(url).items() if k in slice_} == slice_
    assert page.url(slice_, parsed) == url  # one view, one link


@pytest.mark.parametrize("page", PAGES, ids=[p.path for p in PAGES])
def test_defaults_write_no_parameter(page):
    assert page.url(None, page.defaults()) == page.path
    assert page.parse({}) == (page.defaults(), [])


def _hostile(f: Field) -> list[list[str]]:
    """Values of ``f`` a link can give that the page cannot use."""
    if f.kind == "int":
        bad = [["abc"], ["2.5"]]
        bad += [[str(int(f.low) - 1)]] if f.low is not None else []
        bad += [[str(int(f.high) + 1)]] if f.high is not None else []
        return bad
    if f.kind == "float":
        bad = [["abc"], ["nan"]]
        bad += [[str(f.low - 0.01)]] if f.low is not None else []
        bad += [[str(f.high + 1)]] if f.high is not None else []
        return bad
    if f.kind in ("choice", "bool"):
        return [["no-such-choice"]]
    if f.kind == "list" and f.choices:
        return [["no-such-choice"]]
    if f.kind == "list" and f.item == "int":
        return [["3"], ["x", "4"], ["1", "4"]]
    return []  # any text is a str: the store decides (checked on the page)


CASES = [(page, f, raw) for page in PAGES for f in page.fields for raw in _hostile(f)]


@pytest.mark.parametrize("page, f, raw", CASES, ids=[f"{p.path}?{f.name}={'&'.join(r)}" for p, f, r in CASES])
def test_every_unusable_value_gets_a_sentence(page, f, raw):
    values, problems = page.parse({f.name: raw})
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"The link's {f.name} '")
    assert any(v in problems[0] for v in raw if v != "")
    assert values[f.name] == page.defaults()[f.name] or f.kind == "list"


def test_hostile_cases_cover_every_typed_field():
    typed = [(p.path, f.name) for p in PAGES for f in p.fields if f.kind != "str" and not (f.kind == "list" and
                                                                                          not f.choices and f.item == "str")]
    covered = {(p.path, f.name) for p, f, _ in CASES}
    assert set(typed) == covered and len(typed) >= 20


@pytest.mark.parametrize("page, params, sentence", [
    (DETECTORS, {"rule": "bogus"}, "The link's rule 'bogus' is neither own nor top_pct; using own."),
    (DETECTORS, {"top_pct": "0"}, "The link's top_pct '0' is not a number from 0.5 to 100.0; using 10.0."),
    (DETECTORS, {"threshold": "top_k"}, "The link's threshold 'top_k' is not a parameter of this page "
                                        "(/detectors); ignored."),
    (RESCORE, {"rescore_seeds": "abc"}, "The link's rescore_seeds 'abc' is not a whole number from 1 to 10; using 1."),
    (RESCORE, {"rescore_detectors": ["iforest", "nope"]},
     "The link's rescore_detectors 'nope' is not one of random, iforest, knn, lof, ecod, copod, hbos, ocsvm, logreg, "
     "random-forest, hist-gb; left out."),
    (PROPAGATION, {"top_k": "5"}, "The link's top_k '5' is not a parameter of this page (/propagation); ignored."),
    (PROPAGATION, {"length": "3"}, "The link's length '3' is not 2 values, each a whole number ≥ 2; "
                                   "showing every length."),
    (EXPLORER, {"step": "abc"}, "The link's step 'abc' is not a step number (0, 1, 2, …); no step is open."),
    (EXPLORER, {"top_k": "-1"}, "The link's top_k '-1' is not a whole number of steps ≥ 0; using the top 1."),
    (EXPLORER, {"color": "red"}, "The link's color 'red' is neither agent nor action; colouring by agent."),
    (EXPLORER, {"top_k": "2", "threshold": "0.5"}, "The link gives both top_k and threshold; the threshold is used."),
])
def test_problem_sentences(page, params, sentence):
    assert page.parse(params)[1] == [sentence]


def test_colliding_names_are_gone():
    """A score cut is ``threshold``, a number of steps ``top_k``, a percentage ``top_pct``."""
    for page in PAGES:
        names = set(page.names)
        assert "threshold" not in names or page["threshold"].kind == "float"
        assert "top_k" not in names or page["top_k"].kind == "int"
        assert "top_pct" not in names or page["top_pct"].high == 100.0


def test_slice_is_declared_once():
    import queries

    assert tuple(f.name for f in SLICE) == queries.SLICE_COLUMNS
    assert all(f.kind == "list" for f in SLICE)


def test_explorer_url():
    assert explorer_url("whowhen:Algorithm-Generated/1", 3, "a&b") == \
        "/explorer?run=whowhen%3AAlgorithm-Generated%2F1&step=3&set=a%26b"
    assert explorer_url("r", slice={"backbone": ["GPT-4.1"]}, top_k=2) == "/explorer?backbone=GPT-4.1&run=r"
    assert explorer_url("r", 0, "s", threshold=6.0, expand=["P1", "P2"], base="http://h:1/explorer") == \
        "http://h:1/explorer?run=r&step=0&set=s&threshold=6.0&expand=P1&expand=P2"
    with pytest.raises(KeyError):
        explorer_url("r", cell_page=2)


def test_readme_table_is_generated_from_the_declarations():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert in_readme(readme) == section(), "README drifted: run python -m auditatlas.views --write README.md"
    for name in ("detectors_corpus", "metric", "cell_page", "chain_page", "rescore_seeds", "cross_corpus", "top_pct"):
        assert f"`{name}`" in section()


def test_readme_command_prints_the_block(capsys):
    from auditatlas.views.__main__ import main

    assert main(["--readme"]) == 0
    assert capsys.readouterr().out.strip() == section()


def test_every_page_module_is_declared_and_every_declaration_has_its_module():
    """app.py's navigation is the declarations: a page file nobody declared would never show."""
    from auditatlas.views.pages import PAGES

    declared = {p.script for p in PAGES}
    on_disk = {f"pages/{f.name}" for f in (REPO / "pages").glob("*.py")}
    assert declared == on_disk


def test_every_declared_page_has_a_view_function_and_none_can_be_declared_without():
    """The export and a tour's stop show a page through its declared view function: every page has
    one, of the one signature, and a declaration without one is refused."""
    import inspect

    from auditatlas.views import PageState

    for page in PAGES:
        function = page.view_function()
        assert function.__module__.startswith("auditatlas.views."), page.path
        assert list(inspect.signature(function).parameters) == ["query", "link", "root", "remember"], page.path
    with pytest.raises(TypeError, match="view"):
        PageState(path="/x", title="X", what="nothing")  # the missing view is the point
    with pytest.raises(ValueError, match="is not 'module:function'"):
        PageState(path="/x", title="X", what="nothing", view="")


@pytest.mark.parametrize("shown, root", [
    ("http://localhost:8501/search?q=timeout&page=2", "http://localhost:8501"),
    ("http://localhost:8501/explorer?run=a", "http://localhost:8501"),
    ("http://localhost:8501/", "http://localhost:8501"),
    ("http://localhost:8501", "http://localhost:8501"),
    ("https://host.example:9/atlas/patterns?run=r&step=1", "https://host.example:9/atlas"),
    ("https://host.example:9/atlas/", "https://host.example:9/atlas"),
])
def test_a_link_into_the_explorer_starts_at_the_app_root_whatever_page_writes_it(shown, root):
    """A search hit's link once went to /search/explorer (a blank page): the page's own path is
    never part of another page's link."""
    from components.explorer_links import page_base

    assert page_base(shown) == root + "/explorer"
    assert page_base(None) == "/explorer"
