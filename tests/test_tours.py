"""Guided tours (auditatlas/views/tours.py, /tour, `auditatlas tours`, `auditatlas export-tour`).

Everything runs on the hand-made store of review_store.py (4 runs, 8 prediction sets), built
once per module and copied for each test: a tour round trip through the store, a tour carried to another store that lacks
one of its values, untrusted names and sentences in the page and the file, the file holding
every stop with its libraries once, and the page's draft made from the sidebar.
"""
from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest
from streamlit.testing.v1 import AppTest

import queries
import review_store
from app_support import page_texts
from auditatlas import store, store_appends
from auditatlas.export import export_view
from auditatlas.views import tours
from cli_support import run_cli
from components.safe import md
from conftest import REPO

PAYLOAD = '<script>alert("t")</script><img src=x onerror=alert(1)> **bold** [link](http://e.x) $x$'


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The hand-made store with its derived tables built: each copy finds them (a tour saved
    leaves their key alone), so no test builds them again."""
    root = review_store.build(tmp_path_factory.mktemp("tours") / "store")
    assert queries.warm(root)
    return root


@pytest.fixture()
def root(built, tmp_path) -> Path:
    """A private copy of the module's store (a test that saves a tour owns it)."""
    return Path(shutil.copytree(built, tmp_path / "store"))


def _cli(*argv: str) -> tuple[int, str, str]:
    done = run_cli(*argv)
    return done.returncode, done.stdout, done.stderr


def _manifest(root: Path) -> str:
    return (root / "MANIFEST.json").read_text()


def test_a_tour_round_trip(root):
    draft = (tours.Tour("figure 3")
             .add("http://localhost:8501/explorer?run=r%3Aa&step=2", "The anomalous step of run a.")
             .add("/boards?tab=POST", "The POST board.")
             .add("/?backbone=X", "The overview of backbone X.")
             .add("/detectors?tab=Overall", "To be removed."))
    draft = draft.move(2, -2).remove(3).with_sentence(1, "  The anomalous step.  ")
    # By hand: the overview moved to the front, the detectors stop gone, the host dropped.
    expected = (tours.Stop("/?backbone=X", "The overview of backbone X."),
                tours.Stop("/explorer?run=r%3Aa&step=2", "The anomalous step."),
                tours.Stop("/boards?tab=POST", "The POST board."))
    assert draft.stops == expected
    saved = tours.save(root, draft)
    query = queries.runner(root)
    back = tours.read(query, "figure 3")
    assert back == saved and back.stops == expected and back.version_id and back.saved_at
    # A second save is a new version: it counts, the first stays in the history.
    tours.save(root, back.remove(0))
    assert tours.read(query, "figure 3").stops == expected[1:]
    listed = tours.listing(query)
    assert listed[["name", "stops", "versions"]].values.tolist() == [["figure 3", 2, 2]]
    code, out, _ = _cli("--store", str(root), "tours", "--json")
    assert code == 0 and [(t["name"], t["stops"], t["versions"]) for t in json.loads(out)["tours"]] == [("figure 3", 2, 2)]
    assert tours.remove(root, "figure 3", query) and tours.read(query, "figure 3") is None
    assert tours.listing(query).empty
    assert queries.run("tour_versions", {"name": "figure 3"}, root=root)["stops"].tolist() == [0, 2, 3]


def test_a_tour_that_cannot_be_saved_says_why_and_writes_nothing(root):
    before = _manifest(root)
    with pytest.raises(tours.BadTour) as bad:
        tours.save(root, tours.Tour(" ", (tours.Stop("/boards", ""),)))
    assert str(bad.value) == ("A tour needs a name. Stop 1 has no sentence: say in one sentence what the reader "
                              "should see there.")
    with pytest.raises(tours.BadTour, match="at least one stop"):
        tours.save(root, tours.Tour("empty"))
    with pytest.raises(tours.BadTour, match="'/nowhere' is not a page of the app"):
        tours.Tour("x").add("/nowhere?run=1", "a sentence")
    with pytest.raises(tours.BadTour, match="cannot be a stop of another tour"):
        tours.Tour("x").add("/tour?name=y", "a sentence")
    bad = {"name": "x", "stops": [{"link": "/boards", "sentence": "fine"}, {"link": "/nowhere", "sentence": "s"}]}
    (root.parent / "bad.json").write_text(json.dumps(bad))
    code, _, err = _cli("--store", str(root), "tours", "import", str(root.parent / "bad.json"))
    assert code == 1 and err.startswith(f"error: {root.parent / 'bad.json'}: stop 2's link: '/nowhere' is not a page")
    for action in ("show", "remove"):
        code, _, err = _cli("--store", str(root), "tours", action, "no such tour")
        assert (code, err) == (1, "error: the store holds no tour named 'no such tour'; `auditatlas tours` lists them.\n")
    assert _manifest(root) == before


def test_many_saves_are_merged_into_one_part_and_keep_every_version(root, monkeypatch):
    monkeypatch.setattr(store_appends, "COMPACT_AT", 3)
    for i in range(5):
        tours.save(root, tours.Tour("t").add("/boards", f"version {i}"))
    folder = root / store.read_manifest(root)["sources"]["tours"]["dir"] / "tours"
    # Saves 1-3 add a part each; the 4th finds 3 and merges them (1 + its own), the 5th adds one.
    assert len(list(folder.glob("part-*.parquet"))) == 3
    assert len(queries.run("tour_versions", {"name": "t"}, root=root)) == 5
    assert tours.read(queries.runner(root), "t").stops[0].sentence == "version 4"


def test_a_tour_saving_keeps_the_derived_tables_key(root):
    """A tour is no data a derived table reads: saving one must not rebuild them."""
    key = store.manifest_bytes(store.read_manifest(root))
    tours.save(root, tours.Tour("t").add("/boards", "b"))
    assert "tours" in store.read_manifest(root)["sources"]
    assert store.manifest_bytes(store.read_manifest(root)) == key


def test_a_tour_opens_on_another_store_and_reports_the_value_it_lacks(root, built, tmp_path):
    """Made on one store, moved with `tours show --json` / `tours import` to a second store that
    holds the same traces but not the prediction sets: the stop drawing set U1 says so there."""
    stops = tours.Tour("moved").add("/explorer?run=r%3Ab&step=3&set=U1", "Set U1 flags step 3.") \
                               .add("/explorer?run=r%3Aa", "Run a, no set.")
    tours.save(root, stops)
    code, out, _ = _cli("--store", str(root), "tours", "show", "moved", "--json")
    assert code == 0
    (tmp_path / "moved.json").write_text(out)
    other = Path(shutil.copytree(built, tmp_path / "other"))  # the same traces, no tour yet
    assert store.remove_source(other, "sets")
    code, out, err = _cli("--store", str(other), "tours", "import", str(tmp_path / "moved.json"))
    assert code == 0, err
    assert tours.read(queries.runner(other), "moved").stops == stops.stops
    lacks = "The store holds no prediction set 'U1'; no detector is drawn."
    on_other = export_view(queries.runner(other), other, "/tour?name=moved")
    on_first = export_view(queries.runner(root), root, "/tour?name=moved")
    assert lacks in on_other.warnings and lacks not in on_first.warnings
    assert html.escape("Set U1 flags step 3.") in on_other.html  # the stop keeps its place and sentence
    assert "Run r:b" not in on_other.warnings  # the run itself is held on both


def test_the_tour_file_holds_every_stop_and_its_libraries_once(root, tmp_path):
    tour = (tours.Tour("three").add("/?backbone=X", "Backbone X.").add("/explorer?run=r%3Aa&step=2", "Run a's graph.")
            .add("/explorer?run=r%3Ano-such", "A lost run."))
    tours.save(root, tour)
    out = tmp_path / "three.html"
    code, _, err = _cli("--store", str(root), "export-tour", "three", "--out", str(out))
    assert code == 0, err
    assert "warning: Stop 3 cannot be shown here: The store holds no run with id 'r:no-such'." in err
    page = out.read_text(encoding="utf-8")
    assert "<title>Audit Atlas · Tour: three</title>" in page and "/tour?name=three" in page
    for i, stop in enumerate(tour.stops, start=1):
        assert f'<h2 id="stop-{i}">Stop {i} of 3' in page
        assert f'<p class="sentence">{html.escape(stop.sentence)}</p>' in page
    assert "backbone (llm) in X: 1 runs, 4 steps, 4 labeled." in page  # review_store: run r:a alone
    # The overview's grids are tables: no figure, so no plotly.js; the run's graph brings vis-network once.
    assert page.count('<div class="figure" data-figure=') == 0 and page.count('id="lib-plotly"') == 0
    assert page.count('id="lib-vis"') == 1
    assert page.count('data-graph="graph-') == 1
    code, _, err = _cli("--store", str(root), "export-tour", "nope", "--out", str(tmp_path / "n.html"))
    assert code == 1 and "holds no tour named 'nope'" in err and not (tmp_path / "n.html").exists()


def test_untrusted_names_and_sentences_stay_text_in_the_file(root):
    tours.save(root, tours.Tour(PAYLOAD).add("/?backbone=X", PAYLOAD))
    page = export_view(queries.runner(root), root, "/tour?" + urlencode({"name": PAYLOAD})).html
    assert PAYLOAD not in page and "<img" not in page
    assert page.count(html.escape(PAYLOAD)) >= 3  # the title, the heading, the stop's sentence
    assert page.count("<script") == page.count("</script>")


# ---------------------------------------------------------------------------- the page (AppTest)


@pytest.fixture()
def app_root(root, monkeypatch) -> Path:
    # As test_review_app: the page-manager guard would rerun every script once and lose a click.
    monkeypatch.setattr("components.shell.ensure_app_navigation", lambda: None)
    return root


def _plain(text: str) -> str:
    return text.replace("\\", "").replace("\u2060", "")


def test_the_page_shows_one_stop_the_sentence_above_and_moves_on(app_root, monkeypatch):
    tours.save(app_root, tours.Tour(PAYLOAD).add("/?backbone=X", PAYLOAD)
               .add("/explorer?run=r%3Ab&set=U9", "Second stop."))
    # The page alone (it reads no slice): app.py's first run would draw the Overview for nothing.
    monkeypatch.setenv("AUDITATLAS_STORE", str(app_root))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "pages" / "tour.py"), default_timeout=120)
    at.query_params.update(name=PAYLOAD, stop="2")
    at.run()
    assert not at.exception, at.exception
    # The name and the sentence go to Markdown escaped (every special character), so they read as text.
    assert [h.value for h in at.subheader][:1] == [md(PAYLOAD)]
    assert "#### Second stop\\." in [m.value for m in at.markdown]
    assert md(PAYLOAD).startswith("\\<script\\>") and PAYLOAD in _plain(md(PAYLOAD))
    lacks = "The store holds no prediction set 'U9'; no detector is drawn."
    assert [_plain(w.value) for w in at.warning].count(lacks) == 1
    # The stop's view, drawn as its page draws it: the run, its graph (one frame), no second sentence.
    frames = [e.proto.srcdoc for e in at.get("iframe")]
    assert len(frames) == 1 and "Second stop." not in frames[0] and "traceNetwork" in frames[0]
    assert [m.value for m in at.markdown].count("#### Second stop\\.") == 1
    assert "Run b" in [h.value for h in at.subheader] and "r:b" in [c.value for c in at.code]  # label, then id
    assert at.button(key="tour_next").disabled
    at.button(key="tour_previous").click().run()
    assert not at.exception, at.exception
    assert "stop" not in at.query_params  # the first stop is the default: the link writes none
    assert "#### " + md(PAYLOAD) in [m.value for m in at.markdown]  # stop 1's sentence, escaped
    assert "Stop 1 of 2" in str([p.proto for p in at.get("progress")])
    at.query_params["stop"] = "5"
    at.run()
    assert any("'5', which this view does not hold here" in _plain(w.value) for w in at.warning)
    at.button(key="tour_edit").click().run()  # the saved tour into the draft, to edit and save anew
    assert "Draft (2 stops)" in [e.label for e in at.expander]
    at.query_params["name"] = "no such tour"
    at.run()
    assert "The link asks for tour 'no such tour', which this view does not hold here; showing the draft and the " \
           "saved tours instead." in [_plain(w.value) for w in at.warning]


def test_a_view_is_added_from_the_sidebar_reordered_removed_and_saved(root, monkeypatch):
    """The sidebar's Tour box runs in app.py, before the page: on the Overview, two slices added
    (the link as the URL holds it at the click), then reordered, one removed, saved on /tour.
    The page guard is left in place: it reruns each page into app.py (so the sidebar is drawn),
    and every action here is a callback, which runs before that rerun."""
    monkeypatch.setenv("AUDITATLAS_STORE", str(root))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.query_params["backbone"] = "X"
    at.run()
    at.sidebar.button(key="tour_add").click().run()  # no sentence: nothing added, and said why
    assert any("Write the sentence first" in _plain(w.value) for w in at.sidebar.warning)
    at.sidebar.text_area(key="tour_sentence").input("Backbone X.")
    at.sidebar.button(key="tour_add").click().run()
    at.query_params["backbone"] = "Y"
    at.sidebar.text_area(key="tour_sentence").input(PAYLOAD)
    at.sidebar.button(key="tour_add").click().run()
    assert not at.exception, at.exception
    assert "2 stop(s) in the draft" in at.sidebar.expander[0].label
    # A reload: a new session on the URL the browser shows, which carries the draft.
    reloaded = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    assert "draft" in at.query_params
    reloaded.query_params.update(dict(at.query_params))
    reloaded.run()
    assert not reloaded.exception, reloaded.exception
    assert "2 stop(s) in the draft" in reloaded.sidebar.expander[0].label
    at.switch_page("pages/tour.py")
    at.run()
    assert [t.value for t in at.text_input if t.key.startswith("tour_sentence_")] == ["Backbone X.", PAYLOAD]
    at.button(key="tour_up_1").click().run()  # Y first
    at.button(key="tour_remove_1").click().run()  # X gone
    at.text_input(key="tour_draft_name").input("from the sidebar")
    at.button(key="tour_save").click().run()
    assert not at.exception, at.exception
    saved = tours.read(queries.runner(root), "from the sidebar")
    assert saved.stops == (tours.Stop("/?backbone=Y", PAYLOAD),)
    assert at.query_params["name"] == "from the sidebar"  # the saved tour is open
    assert PAYLOAD in _plain(page_texts(at))


def test_the_draft_travels_in_the_url_text_as_it_was_and_a_bad_one_is_one_sentence():
    encode, decode = tours.encode_draft, tours.decode_draft

    made = tours.Tour("d").add("/?backbone=X", PAYLOAD).add("/explorer?run=r%3Ab&step=1", "Two.")
    text = encode(made)
    assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")  # URL-safe as is
    back = decode(text)
    assert back.stops == made.stops and back.name == "d"
    with pytest.raises(tours.BadTour, match=r"^The URL's draft=\.\.\. is not a tour draft \(error\)\.$"):
        decode(text[:-6])
    with pytest.raises(tours.BadTour, match="stop 1's link"):
        decode(encode(tours.Tour("d", (tours.Stop("https://elsewhere.example/x", "no"),))))
