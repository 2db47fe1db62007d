"""Export a view as one offline HTML file (auditatlas.export, `auditatlas export`).

Unit tests read the file as text (values, link, store version, escaping); one browser test
opens an exported Boards, an exported Explorer and an exported tour of two stops from file://
with every request refused.
"""
from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlencode

import pandas as pd
import pytest

import queries
from auditatlas.export import ExportError, export_view
from stores import shared_store

URL = re.compile(r"https?://")


def _export(root: Path, link: str, **kwargs) -> str:
    return export_view(queries.runner(root), root, link, **kwargs).html


def _sources(root: Path) -> list[str]:
    manifest = json.loads((root / "MANIFEST.json").read_text())
    return [Path(entry["dir"]).name for entry in manifest["sources"].values()]


def test_overview_file_holds_the_slice_numbers_the_link_and_the_store_version():
    root = shared_store("demo-300-s0")
    backbone = queries.run("slice_options", root=root).query("column_name == 'backbone'")["value"].iloc[0]
    page = _export(root, f"http://localhost:8501/?backbone={backbone}")
    counts = queries.run("slice_summary", {"slice": {"backbone": [backbone]}}, root=root)
    assert f"{int(counts['runs'].sum()):,} runs, {int(counts['steps'].sum()):,} steps" in page
    assert html.escape(f"/?backbone={backbone}".replace(" ", "+")) in page or f"backbone={backbone}" in page
    for source in _sources(root):
        assert source in page
    assert "made</dt>" in page
    # The page's one badge, first thing after the facts: the simulated corpus and the labels.
    badge = page[page.index('<p class="badge">'):]
    assert badge.index("Simulated data: maadbench-sim") < badge.index("Labels: released") < badge.index("</p>")
    assert page.count('<p class="badge">') == 1
    # Its two grids are coloured tables, so the file carries no chart library at all.
    assert page.count('id="lib-plotly"') == 0 and page.count('data-figure="figure-') == 0
    assert page.count('<td style="background-color: rgb(') > 10
    assert page.count("data:text/csv;charset=utf-8,") == page.count("<table ")
    # The only URL in the file is the link it came from (the libraries travel compressed).
    assert URL.findall(page.replace("http://localhost:8501/", "")) == []


def test_boards_file_holds_every_entrant_and_the_published_values(app_store):
    from auditatlas.analyses.board_published import reconcile
    from auditatlas.analyses.board_registry import run_board

    page = _export(app_store, "/boards?tab=PRE")  # the PRE board has published cells to set beside
    query = queries.runner(app_store)
    result = run_board("pre", query, None)
    cells = reconcile(result, query)
    assert result.rows and cells
    for row in result.rows:
        if not row.seed_group:
            assert f"<td>{html.escape(row.entrant)}</td>" in page
    for cell in cells:
        if cell.published is not None:
            assert re.search(rf"<td[^>]*>{cell.published:.3f}</td>", page), cell
    assert "Published vs recomputed" in page and "background-color: #d8f3dc" in page
    assert "/boards?tab=PRE" in page


def test_explorer_payloads_stay_text(tmp_path):
    from test_untrusted_browser import SCRIPT, SET_ID, build_payload_store

    root = tmp_path / "store"
    run_id = build_payload_store(root, tmp_path / "release")
    page = _export(root, "/explorer?" + urlencode({"run": run_id, "step": 0, "set": SET_ID}))
    assert SCRIPT not in page  # nowhere as markup
    assert html.escape(SCRIPT) in page  # shown as text in the tables and the run's facts
    # Every <script> element the file opens is one it closes itself: no data ends one early.
    assert page.count("<script") == page.count("</script>")
    assert page.count('data-graph="graph-1"') == 1 and page.count('id="lib-vis"') == 1
    assert "onerror=" not in re.sub(r"&lt;img[^<]*", "", page.split('<script type="application/json"')[0])


def test_a_link_the_page_cannot_use_is_one_sentence(capsys, tmp_path):
    from auditatlas import cli

    root = shared_store("demo-300-s0")
    with pytest.raises(ExportError, match=r"^The link's tab 'NOPE' is not one of PRE, LIVE, POST; using PRE\.$"):
        _export(root, "/boards?tab=NOPE", strict=True)
    assert "The link&#x27;s tab &#x27;NOPE&#x27;" in _export(root, "/boards?tab=NOPE")  # the app's export: a warning
    out = tmp_path / "x.html"
    assert cli.main(["--store", str(root), "export", "/tour", "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == ("error: The link names no tour (it has no name=...); save the draft "
                                               "under a name, then export /tour?name=NAME.")
    assert not out.exists()
    assert cli.main(["--store", str(root), "export", "/nowhere?x=1", "--out", str(out)]) == 1
    assert "'/nowhere' is not a page of the app" in capsys.readouterr().err
    assert cli.main(["--store", str(root), "export", "/?backbone=NOPE", "--out", str(out)]) == 0
    assert "backbone NOPE is not in this store" in capsys.readouterr().err
    assert "backbone NOPE is not in this store" in out.read_text()


def offline_page(browser, refused: list[str], errors: list[str]):
    """A page that refuses (and records) every request that is not the file itself or a data:
    address, and records every script error: the network is off, as for a reviewer on a train."""
    page = browser.new_page()
    page.set_viewport_size({"width": 1300, "height": 1200})
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def gate(route):
        if route.request.url.startswith(("file://", "data:", "about:")):
            return route.continue_()
        refused.append(route.request.url)
        return route.abort()

    page.route("**/*", gate)
    return page


@pytest.mark.browser
def test_exported_boards_and_explorer_open_offline(app_store, browser, tmp_path):
    from browser_support import graph_frame, require_chromium

    require_chromium()
    run_id = _a_run(app_store)
    files = {"boards": tmp_path / "boards.html", "explorer": tmp_path / "explorer.html"}
    files["boards"].write_text(_export(app_store, "/boards?tab=LIVE&curves=1"), encoding="utf-8")
    files["explorer"].write_text(_export(app_store, "/explorer?" + urlencode(
        {"run": run_id, "step": 1})), encoding="utf-8")
    # A tour of two stops (on a copy: saving it writes the store), in the same browser visit.
    from auditatlas.views import tours
    from stores import copy_of

    copy = copy_of("app", tmp_path / "store")
    tours.save(copy, tours.Tour("offline").add("/propagation?side_by_side=1", "The heatmaps.").add("/boards?tab=LIVE&curves=1", "LIVE.")
               .add("/explorer?" + urlencode({"run": run_id, "step": 1}), "One run."))
    files["tour"] = tmp_path / "tour.html"
    files["tour"].write_text(_export(copy, "/tour?name=offline"), encoding="utf-8")
    assert files["tour"].read_text(encoding="utf-8").count('id="lib-plotly"') == 1  # two stops' figures, one plotly.js
    refused: list[str] = []
    errors: list[str] = []
    page = offline_page(browser, refused, errors)
    try:
        page.goto(files["boards"].as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        page.wait_for_selector("div[data-figure] svg.main-svg", timeout=60_000)
        assert page.locator("table.sortable").count() >= 1
        page.goto(files["explorer"].as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        frame = graph_frame(page)
        assert frame.evaluate("() => document.querySelector('#trace-graph canvas') !== null")
        assert frame.evaluate("() => window.traceNetwork.body.data.nodes.length") > 0
        page.goto(files["tour"].as_uri())  # every stop's figures drawn from the one plotly.js, and the graph
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        assert page.locator("#stop-3").count() == 1
        drawn = page.evaluate("() => document.querySelectorAll('div[data-figure] svg.main-svg').length > 0 && "
                              "[...document.querySelectorAll('div[data-figure]')].every(d => d.querySelector('svg'))")
        assert drawn and page.locator("div[data-figure]").count() >= 2
        assert graph_frame(page).evaluate("() => window.traceNetwork.body.data.nodes.length") > 0
    finally:
        page.close()
    assert refused == [] and errors == []


def _cell(text: str) -> str:
    """A table cell as shown or as its CSV reads back, compared as a number where it is one
    (the CSV of an integer column with a blank reads back as 206.0; the table shows 206; a share
    shown as 84.6% is its CSV's 84.6), a blank as empty."""
    text = text.strip().replace(",", "").removesuffix("%")
    if text in ("", "nan", "—"):  # a blank: the table shows a dash, the CSV leaves the cell empty
        return ""
    try:
        return f"{float(text):.6g}"
    except ValueError:
        return text


def _a_run(root: Path) -> str:
    con = queries.connect(root)
    try:
        return con.execute("SELECT run_id FROM runs WHERE n_steps >= 4 ORDER BY run_id LIMIT 1").fetchone()[0]
    finally:
        con.close()


def _table(page: str, name: str) -> pd.DataFrame:
    """The file's own CSV of its table ``name`` (what a reviewer downloads), read back."""
    import io
    from urllib.parse import unquote

    found = re.search(rf'data-table="{re.escape(name)}".*?href="data:text/csv;charset=utf-8,([^"]*)"', page, re.S)
    assert found, f"no table {name} in the file"
    return pd.read_csv(io.StringIO(unquote(html.unescape(found.group(1)))))


def _hand(root: Path, sql: str) -> list[tuple]:
    con = queries.connect(root)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# A chain is the failed (label 1) steps of one scope when there are two or more (pages/propagation.py).
CHAIN_SCOPES = "SELECT run_id, scope, count(*) AS n FROM steps WHERE label = 1 GROUP BY ALL HAVING count(*) >= 2"


def test_propagation_chains_and_failure_modes_tabs_hold_the_hand_counts():
    root = shared_store("demo-300-s0")
    [(chains,)] = _hand(root, f"SELECT count(*) FROM ({CHAIN_SCOPES})")
    [(of_three,)] = _hand(root, f"SELECT count(*) FROM ({CHAIN_SCOPES}) WHERE n = 3")
    page = _export(root, "/propagation?tab=Chains")
    assert f"{chains:,} chains." in page and f"Page 1 of {-(-chains // 50)} ({chains:,} chains)." in page
    assert page.count('id="lib-plotly"') == 1 and page.count('data-figure="figure-') == 1  # the length chart
    page = _export(root, "/propagation?tab=Chains&length=3&length=3&origin=NOPE")
    assert f"({of_three:,} chains)." in page and "length 3 to 3" in page
    assert "The link asks for origin action &#x27;NOPE&#x27;, which this view does not hold here; left out." in page
    listed = _table(page, "chains")
    assert set(listed["length"]) == {3} and len(listed) == min(of_three, 50)
    page = _export(root, "/propagation?tab=Failure+modes")
    modes = _table(page, "failure-modes")
    per_backbone = dict(_hand(root, "SELECT r.backbone, count(*) FROM steps s JOIN runs r USING (run_id) "
                                    "WHERE s.label = 1 GROUP BY 1"))
    assert modes.groupby("backbone")["failed_steps"].sum().to_dict() == per_backbone
    assert "Propagation heatmap" not in page and "Silent vs loud" not in page  # the open tab only, as the page


def test_explorer_without_a_run_exports_the_run_list():
    root = shared_store("demo-300-s0")
    ids = [r for (r,) in _hand(root, "SELECT run_id FROM runs WHERE backbone = 'GPT-4.1' ORDER BY run_id")]
    page = _export(root, "/explorer?backbone=GPT-4.1")
    assert f"{len(ids):,} runs, sorted by run id." in page
    runs = _table(page, "runs")
    assert list(runs["run_id"]) == ids and set(runs["backbone"]) == {"GPT-4.1"}
    assert 'data-graph="' not in page  # no run open, no graph


def test_detectors_cell_errors_and_recall_by_role_hold_the_page_numbers(app_store):
    from auditatlas.analyses import anomaly_propagation as P
    from auditatlas.analyses import detector_comparison as dv

    query = queries.runner(app_store)
    sets = dv.step_sets(dv.prediction_sets(query, "maadbench-sim"))
    detector = sorted(sets["detector"])[-1]
    set_id = sorted(sets.loc[sets["detector"] == detector, "set_id"])[0]
    action = "SOLVE_CLUE"
    page = _export(app_store, "/detectors?" + urlencode({"detectors_corpus": "maadbench-sim", "grid_backbone": "GPT-4.1",
                                                         "action": action, "detector": detector, "set": set_id}))
    # What the page lists for this cell: its own query (analyses.detector_comparison.cell_errors).
    errors = dv.cell_errors(query, set_id, "GPT-4.1", action, {}, "own", 10.0)
    assert f"Backbone GPT-4.1; action {action}; detector {html.escape(detector)}; prediction set {set_id}." in page
    for kind, table_name in (("false positive", "errors-positive"), ("false negative", "errors-negative")):
        part = errors[errors["kind"] == kind]
        total = int(part["n_in_cell"].iloc[0]) if len(part) else 0
        assert f"{kind.capitalize()}s " in page and f": {len(part)} of {total:,} shown." in page
        if len(part):
            shown = _table(page, table_name)
            assert list(zip(shown["run_id"], shown["step"])) == list(zip(part["run_id"], part["step_idx"]))
            assert set(shown["action"]) == {action} and set(shown["backbone"]) == {"GPT-4.1"}
    assert (errors["label"] != errors["pred_label"]).all() and len(errors)  # the cell has errors to show
    # The grid's CSV is the app's: each cell with its interval and counts (the table shows the number).
    grid_csv = re.search(r'download="grid-maadbench-sim-GPT-4\.1[^"]*" href="data:text/csv;charset=utf-8,([^"]*)"', page)
    cells = pd.read_csv(io.StringIO(unquote(html.unescape(grid_csv.group(1)))))
    detector_cells = cells.drop(columns=[c for c in cells.columns if c in ("action", "success rate", "labeled steps")])
    assert detector_cells.astype(str).apply(lambda col: col.str.contains(r"\[", regex=True)).any().any()
    page = _export(app_store, "/propagation?tab=Recall+by+role&rule=top_pct&top_pct=20")
    per_set = P.role_recall(P.role_recall_counts(query, {}, 20.0))  # the page's own computation
    long = _table(page, "role-recall-long")
    assert len(long) == len(per_set)
    mine = per_set.set_index(["set_id", per_set["role"].astype(str)])["recall"]
    for row in long.itertuples():
        assert row.recall == round(100 * float(mine[(row.set_id, str(row.role))]), 1)
    assert "score among the top 20% of the set" in page


LIBRARIES = re.compile(r'<script type="application/octet-stream" id="lib-[a-z]+">[^<]*</script>')


@pytest.mark.browser
def test_every_declared_page_exports_with_its_title_store_version_and_link(app_store, browser, tmp_path):
    """One file per page of auditatlas/views/pages.py, with a run, a step, a cell (Propagation's
    and Detectors'), a chain (the Explorer at a chain's origin step) and a tour chosen where the
    page has them: each holds its view's title, the store version and its link, and refers to
    nothing outside itself (no script source, no http(s) address) beyond its inlined libraries."""
    from auditatlas.export import store_version
    from auditatlas.views import tours
    from auditatlas.views.pages import PAGES
    from stores import copy_of

    copy = copy_of("app", tmp_path / "store")  # the tour is saved into a copy; every other view reads the shared store
    [(run, backbone, src, later, origin)] = _hand(app_store, """
        WITH failed AS (SELECT s.run_id, s.scope, s.step_idx, s.action, r.backbone FROM steps s JOIN runs r USING (run_id)
                        WHERE s.label = 1 AND r.corpus = 'maadbench-sim'),
             pairs AS (SELECT a.run_id, a.backbone, a.action AS src, b.action AS later, a.step_idx AS origin
                       FROM failed a JOIN failed b ON a.run_id = b.run_id AND a.scope = b.scope AND b.step_idx > a.step_idx)
        SELECT run_id, backbone, src, later, origin FROM pairs ORDER BY run_id, origin LIMIT 1""")
    query = queries.runner(app_store)
    detector = sorted(dv_sets(query)["detector"])[0]
    links = {
        "/": "/?corpus=maadbench-sim",
        "/boards": "/boards?tab=PRE",  # as the boards test above: the same computation
        "/explorer": "/explorer?" + urlencode({"run": run, "step": origin}),  # a chain's origin step
        "/search": "/search?q=the",
        "/patterns": "/patterns?" + urlencode({"run": run, "step": origin}),
        "/propagation": "/propagation?" + urlencode({"cell_backbone": backbone, "src_action": src, "later_action": later}),
        "/detectors": "/detectors?" + urlencode({"detectors_corpus": "maadbench-sim", "action": src, "detector": detector}),
        "/rescore": "/rescore?rescore_seeds=2",
        "/review": "/review?position=1",
        "/tour": "/tour?name=every+page",
    }
    assert set(links) == {p.path for p in PAGES}  # a page declared later gets a link here
    tours.save(copy, tours.Tour("every page").add(links["/explorer"], "A chain's origin.")
               .add(links["/propagation"], "Its cell."))
    files: dict[str, str] = {}
    for page in PAGES:
        link = links[page.path]
        root = copy if page.path == "/tour" else app_store
        made = export_view(queries.runner(root), root, link)
        text = files[page.path] = made.html
        assert f"<h1>Audit Atlas · {html.escape(page.title)}" in text, page.path
        assert html.escape(store_version(root)) in text and html.escape(made.link.app_link) in text, page.path
        assert made.warnings == (), (page.path, made.warnings)  # every choice held: the view asked for
        outside = LIBRARIES.sub("", text)
        assert "<script src=" not in outside.lower() and URL.findall(outside) == [], page.path
        # Nothing to click in a file: the app's "click a cell" hints are left out, in its charts too.
        # (A file's own table headers sort on a click: that one works here.)
        assert not re.findall(r"(?i)\b(?:click|select) (?:a|on|to|the)\b(?! column header)[^<]{0,40}", outside), page.path
    explorer, cell = files["/explorer"], files["/propagation"]
    assert f"<td>{origin}</td>" in explorer and 'data-graph="graph-1"' in explorer
    [(rescored,)] = _hand(app_store, "SELECT count(*) FROM prediction_sets WHERE origin = 'rescore'")
    assert rescored == 22  # the standard panel: 11 detectors x 2 seeds (tests/stores.py APP_SEEDS)
    assert f"{rescored} re-scored set(s) on the slice" in files["/rescore"] and "seeds 0..1" in files["/rescore"]
    assert "Chains behind a cell" in cell and f"failed {html.escape(later)} step in their scope" in cell
    # Each file opened from disk with the network off (Boards, the Explorer and a tour are opened
    # with their figures and graph in the test above): it draws with no script error and asks
    # for nothing, and its first table's numbers are the file's own CSV of that table.
    from browser_support import require_chromium

    require_chromium()
    refused: list[str] = []
    errors: list[str] = []
    page = offline_page(browser, refused, errors)
    try:
        for path in sorted(set(files) - {"/boards", "/explorer", "/tour"}):
            file = tmp_path / f"{path.strip('/') or 'overview'}.html"
            file.write_text(files[path], encoding="utf-8")
            page.goto(file.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            name = page.locator("[data-table]").first.get_attribute("data-table") if page.locator("[data-table]").count() else None
            if name is not None:
                shown = page.locator(f"table[data-table='{name}'] tbody tr").first.locator("td").all_inner_texts()
                first_row = [str(v) for v in _table(files[path], name).iloc[0].tolist()]
                assert [_cell(c) for c in shown][:3] == [_cell(v) for v in first_row][:3], (path, shown, first_row)
            assert errors == [], (path, errors)
    finally:
        page.close()
    assert refused == []


def dv_sets(query):
    from auditatlas.analyses import detector_comparison as dv

    return dv.step_sets(dv.prediction_sets(query, "maadbench-sim"))


def test_every_declared_page_exports_through_its_view(tmp_path):
    """Each page of auditatlas/views/pages.py exports from its declared view (the tour and the
    search given what they need): one file with the page's title and no warning."""
    from auditatlas.views import tours
    from auditatlas.views.pages import PAGES
    from stores import copy_of

    root = copy_of("demo-300-s0", tmp_path / "store")  # the tour is saved into the copy
    tours.save(root, tours.Tour("t").add("/", "What is loaded."))
    needs = {"/search": "/search?q=the", "/tour": "/tour?name=t"}
    for page in PAGES:
        made = export_view(queries.runner(root), root, needs.get(page.path, page.path))
        assert f"<h1>Audit Atlas · {html.escape(page.title)}" in made.html, page.path
        assert made.warnings == (), (page.path, made.warnings)


def test_links_lead_to_the_served_app_or_say_that_they_need_it(capsys, tmp_path):
    """A file opened from disk cannot follow /explorer?...: with the app's address (the CLI's
    --app-url, the app's own button) each link into the app leads there; without it, each names
    the page and says that it needs the app. Never a relative link into the app."""
    from auditatlas import cli

    root = shared_store("demo-300-s0")
    bare = _export(root, "/search?q=the")
    assert 'href="/' not in bare and "needs the app" in bare
    assert bare.count('<span class="needs-app" title="needs the app">/explorer?') >= 10  # every hit's open cell
    assert "they need the app: this file was made without the app&#x27;s address" in bare
    served = _export(root, "/search?q=the", app_url="http://127.0.0.1:8765/atlas/")
    assert 'href="/' not in served and "needs the app" not in served
    assert served.count('<a href="http://127.0.0.1:8765/atlas/explorer?') == bare.count('class="needs-app" title=')
    assert "into the app at http://127.0.0.1:8765/atlas" in served
    out = tmp_path / "x.html"
    assert cli.main(["--store", str(root), "export", "/search?q=the", "--out", str(out), "--app-url", "localhost:8501"]) == 1
    assert capsys.readouterr().err.strip() == ("error: The app's address 'localhost:8501' is not an http(s) address "
                                               "such as http://localhost:8501.")
    assert not out.exists()
    assert cli.main(["--store", str(root), "export", "/search?q=the", "--out", str(out),
                     "--app-url", "http://localhost:8501"]) == 0
    assert '<a href="http://localhost:8501/explorer?' in out.read_text(encoding="utf-8")
