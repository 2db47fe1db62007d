"""Untrusted text stays text on every page, in a real browser.

A store is built from authored MAADBench-format files whose every text field holds payloads
(script tags, image tags with handlers, ``javascript:`` links, Markdown images and links to
http://example.org, bare URLs and e-mail addresses GFM would link, quotes that break attributes, Streamlit directives, very long strings), with
a backbone, agent, domain, scope, error code and file name made of payloads, plus a prediction
set whose id, protocol and model are payloads. Every page of app.py is opened (the explorer at
the payload run and step, with the payload set chosen): no dialog opens, no payload script runs
(a window flag stays unset in the page and every frame), no request leaves localhost, and the
payload is shown as text.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from browser_support import graph_frame, keep_shot, new_page, require_chromium, shots_dir, streamlit_server, wait_idle
from conftest import REPO

pytestmark = pytest.mark.browser

TEMPLATE = REPO / "tests" / "fixtures" / "maadbench" / "run_20260412_093015_gsm-hard_tool_claude-opus-4-8_0.3" \
    / "20260412093102_EscapeRoom_room_0007_failed.json"
FLAG = "__pwned"
SCRIPT = f"<script>window.{FLAG}='script';alert('script')</script>"
IMG = f"<img src=x onerror=\"window.{FLAG}='img';alert('img')\">"
JS_LINK = f"[click me](javascript:window.{FLAG}='link')"
A_LINK = f"<a href=\"javascript:window.{FLAG}='a'\">a</a>"
MD_IMAGE = "![x](http://example.org/p.png)"
MD_LINK = "[site](http://example.org/)"
AUTOLINKS = "bare http://example.org/a www.example.org/b mail@example.org"  # GFM links these without syntax
QUOTES = f"\"' onmouseover=\"window.{FLAG}='attr'\" data-x='"
DIRECTIVES = ":red[red] :rocket: $\\href{javascript:alert(1)}{tex}$ <b>bold</b> **strong** `code`"
PAYLOAD = " ".join([SCRIPT, IMG, JS_LINK, A_LINK, MD_IMAGE, MD_LINK, AUTOLINKS, QUOTES, DIRECTIVES])
LONG = "A" * 20_000 + " " + PAYLOAD + " " + "Z" * 5_000
# Names: a backbone, agent, domain and scope made of payloads (file names cannot hold '/').
BACKBONE = f"{MD_IMAGE} {SCRIPT}"
AGENT = f"{IMG} agent"
DOMAIN = f"{MD_LINK} {AUTOLINKS} {QUOTES}"
SCOPE = f"P1 {A_LINK}"
ERROR = f"{JS_LINK} {IMG}"
FILE_PAYLOAD = "x<img src=x onerror=alert(1)>'\""
SET_ID = f"payload:{SCRIPT}:{MD_IMAGE}"
VISIBLE = "![x](http://example.org/p.png)"  # shown literally wherever a name or text appears


def _payload_room(template: dict, i: int) -> dict:
    room = copy.deepcopy(template)
    room["config"]["llm"]["model"] = BACKBONE
    room["config"].setdefault("benchmark", {})["clue_domain"] = DOMAIN
    room["room"]["clue_domain"] = DOMAIN
    room["room"]["room_id"] = f"room_{i:04d}"
    room["escaped"] = i % 2 == 0
    room["failure_report"] = {"failed_puzzle": PAYLOAD, "first_failure": PAYLOAD, "chain": [PAYLOAD]}
    for k, entry in enumerate(room["trace"]):
        entry["agent"] = AGENT if k % 2 == 0 else f"{SCRIPT} {k % 3}"
        if entry.get("puzzle_id") == "P1":
            entry["puzzle_id"] = SCOPE
        if isinstance(entry.get("input"), str):
            entry["input"] = LONG if k == 0 else PAYLOAD
        if "output_message" in entry:
            entry["output_message"] = PAYLOAD + "\n" + LONG
        if isinstance(entry.get("verification"), dict) and entry["verification"].get("status") == "wrong":
            entry["verification"]["desc"] = ERROR
    return room


def build_payload_store(root: Path, folder: Path) -> str:
    """Ingest payload rooms (one store source) and a payload prediction set; returns a run id."""
    import queries
    from auditatlas.ingest import ingest
    from auditatlas.store import write_source

    template = json.loads(TEMPLATE.read_text())
    run_dir = folder / f"run_20260101_000000_gsm-hard_tool_{FILE_PAYLOAD}_0.0"
    run_dir.mkdir(parents=True)
    for i in range(12):
        status = "escaped" if i % 2 == 0 else "failed"
        (run_dir / f"2026010100{i:04d}_EscapeRoom_room_{i:04d}_{FILE_PAYLOAD}_{status}.json").write_text(
            json.dumps(_payload_room(template, i)))
    ingest("maadbench", folder, root)
    con = queries.connect(root)
    rows = con.execute("SELECT run_id, step_idx FROM steps ORDER BY run_id, step_idx").fetchall()
    # Two sets: an LLM judge (the explorer's judges' strip shows family 'llm' only) and a
    # detector whose family is itself a payload (the Detectors page groups by family).
    sets = [(SET_ID, "llm"), (SET_ID + "-detector", PAYLOAD)]
    write_source(root, "predictions-payload", {
        "prediction_sets": [{"set_id": set_id, "corpus": "maadbench", "method": PAYLOAD, "family": family,
                             "supervision": "none", "granularity": "step", "protocol": f"{A_LINK} protocol",
                             "model": f"{IMG} model", "origin": "release", "source_file": FILE_PAYLOAD}
                            for set_id, family in sets],
        "predictions": [{"set_id": set_id, "corpus": "maadbench", "run_id": r, "step_idx": s,
                         "score": float((s * 7) % 5), "split": "all"} for set_id, _ in sets for r, s in rows],
    })
    return rows[0][0]


@pytest.fixture(scope="module")
def payload_store(tmp_path_factory):
    require_chromium()
    root = tmp_path_factory.mktemp("payload-store")
    run_id = build_payload_store(root, tmp_path_factory.mktemp("payload-release"))
    return root, run_id


def app_pages() -> list[str]:
    """Every page path app.py declares ("/" for the default page)."""
    text = (REPO / "app.py").read_text()
    paths = ["/"]
    for call in re.findall(r"st\.Page\(([^)]*)\)", text):
        m = re.search(r'url_path\s*=\s*"([^"]+)"', call)
        if m:
            paths.append("/" + m.group(1))
    return paths


def _check(page, outside: list[str], dialogs: list[str], where: str) -> list[str]:
    """Every way ``page`` let a payload become more than text, one sentence each."""
    flags = []
    for frame in page.frames:
        try:
            value = frame.evaluate(f"() => window.{FLAG} || null")
        except Exception:  # noqa: BLE001 - a frame navigating away has nothing to say
            continue
        if value:
            flags.append((frame.url[:80], value))
    # No payload became a link (Markdown link, GFM autolink of a bare URL, HTML anchor).
    links = []
    for frame in page.frames:
        try:
            links += frame.evaluate(r"""() => Array.from(document.querySelectorAll('a[href]'))
                .map(a => a.getAttribute('href'))
                .filter(h => /example\.org|javascript:/i.test(h))""")
        except Exception:  # noqa: BLE001
            continue
    problems = []
    if dialogs:
        problems.append(f"{where}: a dialog opened: {dialogs}")
    if links:
        problems.append(f"{where}: payload text became links: {links}")
    if flags:
        problems.append(f"{where}: payload script ran: {flags}")
    if outside:
        problems.append(f"{where}: requests left localhost: {outside}")
    return problems


def test_every_page_keeps_payloads_as_text(payload_store, browser):
    root, run_id = payload_store
    problems: list[str] = []
    with streamlit_server(root) as server:
        for path in app_pages():
            outside: list[str] = []
            dialogs: list[str] = []
            page = new_page(browser, outside, width=1500, height=2600, dialogs=dialogs)
            if path == "/":
                # Also select the payload backbone, so the slice sentence names it.
                page.goto(f"{server}/?backbone={quote(BACKBONE, safe='')}")
                wait_idle(page, "Overview")
                page.get_by_text(VISIBLE, exact=False).first.wait_for(timeout=60_000)
            elif path == "/explorer":
                link = (f"{server}/explorer?run={quote(run_id, safe='')}&step=0&set={quote(SET_ID, safe='')}"
                        f"&top_k=2&q={quote('window.', safe='')}")
                page.goto(link)
                wait_idle(page, "Step detail")
                frame = graph_frame(page)
                frame.get_by_text(AGENT, exact=False).first.wait_for()  # the legend names the agent, as text
                page.locator("pre").filter(has_text=SCRIPT).first.wait_for()  # the step's text, as text
                page.get_by_text("Judges on this run").first.wait_for()
                page.get_by_text("steps match", exact=False).first.wait_for()
                # Hover every node: tooltips are plain text too.
                box = page.locator("iframe").first.bounding_box()
                for x in range(40, int(box["width"]) - 20, 60):
                    page.mouse.move(box["x"] + x, box["y"] + box["height"] / 3)
                    page.wait_for_timeout(60)
            else:
                # Every backbone's heatmap (one by default) and the LIVE curves (on request), so the
                # payload's names are drawn in the charts too.
                page.goto(server + path + {"/propagation": "?side_by_side=1", "/detectors": "?side_by_side=1",
                                           "/boards": "?curves=1"}.get(path, ""))
                wait_idle(page, "Slice")
                if path == "/boards":  # every tab: the POST boards name the payload prediction set
                    for tab in ("LIVE", "POST"):
                        page.get_by_role("tab", name=tab, exact=True).click()
                        page.wait_for_url(f"**tab={tab}**", timeout=60_000)
                        wait_idle(page, "Slice")
            page.wait_for_timeout(1500)
            keep_shot(page, shots_dir() / f"untrusted-{path.strip('/') or 'overview'}.png", full_page=True)
            problems += _check(page, outside, dialogs, path)
            page.close()
    assert not problems, "\n".join(problems)
