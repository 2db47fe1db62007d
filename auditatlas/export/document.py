"""One self-contained HTML file: headings, sentences, tables with their CSV, figures, graphs.

Everything from the store is text: every string written into the markup goes through
``html.escape``; figures and graph pages travel as JSON inside ``<script type="application/json">``
with ``<``, ``>`` and ``&`` escaped (a ``</script>`` in a trace name stays a string); a
table's CSV is a ``data:`` link, percent-encoded. The file asks for nothing outside itself.
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pandas as pd

from ..figures.tables import csv_safe, file_name
from ..figures.trace_graph import script_json
from ..views import blocks as b
from . import assets

esc = html.escape


def json_text(text: str) -> str:
    """JSON text (already encoded) made safe inside a <script> element: ``<``, ``>`` and ``&``
    occur in JSON only inside strings, where their escapes mean the same."""
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# Our words' marks (``views.blocks.Text``), turned into HTML after the words are escaped and
# before the values are put in: a value's own asterisks stay asterisks.
_MARKS = ((re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"), (re.compile(r"`(.+?)`"), r"<code>\1</code>"),
          (re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])"), r"<em>\1</em>"))
_APP_LINK = re.compile(r"\[([^\]]+)\]\((/[^)\s]*)\)")  # [text](/page?...): a link into the app
NEEDS_APP = "needs the app"


def app_href(url: str, app_url: str | None) -> str | None:
    """Where a link of the view points from the file: an app path (``/explorer?...``) under the
    app's address when the export knows it, else None (from a file on disk it leads nowhere);
    an absolute http(s) address as it is."""
    if url.startswith(("http://", "https://")):
        return url
    if url.startswith("/") and app_url:
        return app_url.rstrip("/") + url
    return None


def words_html(given: b.Words, app_url: str | None = None) -> str:
    """``Words`` as HTML: our words with their marks, every value escaped; a link into the app
    points to ``app_url`` (the served app), or says that it needs the app."""
    text = b.as_text(given)
    words = esc(text.words, quote=False)
    for pattern, repl in _MARKS:
        words = pattern.sub(repl, words)

    def link(m: re.Match) -> str:
        href = app_href(html.unescape(m.group(2)), app_url)
        if href is None:
            return f'{m.group(1)} <span class="needs-app">({NEEDS_APP})</span>'
        return f'<a href="{esc(href)}">{m.group(1)}</a>'

    words = _APP_LINK.sub(link, words)
    if not text.values:
        return words
    return words.format(*(esc(v) if isinstance(v, str) else v for v in text.values))


def cell_text(value: Any) -> str:
    """A table cell as the page shows it: blank marks for missing, numbers short, text as is."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT:
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass
class Document:
    """The parts of one export, in page order; ``render`` writes the file. ``app_url``: the served
    app's address (``http://host:8501``), where the file's links into the app lead; without it
    they say that they need the app."""

    app_url: str | None = None
    parts: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)  # the JSON script elements (figures, graphs)
    n_tables: int = 0
    n_figures: int = 0
    n_graphs: int = 0
    warnings: list[str] = field(default_factory=list)  # every warning sentence, in order (the CLI says them)

    def wh(self, words: b.Words) -> str:
        return words_html(words, self.app_url)

    def link(self, url: str, text: b.Words) -> str:
        """A link of the view: to the app when the file knows where it is, else its text and why
        it leads nowhere from here."""
        href = app_href(url, self.app_url)
        if href is None:
            return (f'{self.wh(text)} <span class="needs-app" title="{esc(url)}">({NEEDS_APP}: open Audit Atlas '
                    f'and go to <code>{esc(url)}</code>)</span>')
        return f'<a href="{esc(href)}">{self.wh(text)}</a>'

    def heading(self, text: b.Words, level: int = 2, anchor: str | None = None) -> None:
        """A heading; ``anchor`` (our own id, never the store's text) lets a link jump to it."""
        ident = f' id="{esc(anchor)}"' if anchor else ""
        self.parts.append(f"<h{level}{ident}>{self.wh(text)}</h{level}>")

    def text(self, sentence: str, kind: str = "") -> None:
        """A sentence (ours or the store's), as text; ``kind``: "", note, warning, info, simulated."""
        self.words(b.Text.plain(sentence, kind))

    def words(self, text: b.Text) -> None:
        """A ``views.blocks.Text``: our words (with their marks) and the values, as text."""
        if text.kind == "hint":  # how to use the app's widgets: nothing to click in a file
            return
        if text.kind in ("warning", "error"):
            self.warnings.append(text.sentence)
        kind = {"error": "warning", "success": "info"}.get(text.kind, text.kind)
        cls = f' class="{kind}"' if kind else ""
        self.parts.append(f"<p{cls}>{self.wh(text)}</p>")

    def warning(self, sentence: str) -> None:
        self.words(b.Text.plain(sentence, "warning"))

    def draw(self, blocks: b.Blocks) -> None:
        """A page's view (``views.blocks``), in order."""
        for block in blocks:
            if isinstance(block, b.Heading):
                self.heading(block.text, min(max(block.level, 2), 6), block.anchor)
            elif isinstance(block, b.Text):
                self.words(block)
            elif isinstance(block, b.Table):
                self.table(block.frame, block.name, block.caption, block.download, block.styles,
                           {c.name: c.link_text for c in block.columns if c.link_text is not None})
            elif isinstance(block, b.Metrics):
                items = "".join(f"<dt>{self.wh(m.label)}</dt><dd>{esc(m.value)}</dd>" for m in block.items)
                self.parts.append(f'<dl class="facts">{items}</dl>')
            elif isinstance(block, b.Figure):
                self.figure(block.figure)
            elif isinstance(block, b.Graph):
                self.graph(block.page)
            elif isinstance(block, b.Pre):
                self.pre(block.label, block.body)
            elif isinstance(block, b.Facts):
                self.facts(block.pairs)
            elif isinstance(block, b.Jumps):
                self.jumps(block.targets)
            elif isinstance(block, b.Link):
                self.parts.append(f'<p class="link">{self.link(block.url, block.text)}</p>')
            elif isinstance(block, b.Fold):
                self.parts.append(f"<details open><summary>{self.wh(block.label)}</summary>")
                self.draw(block.blocks)
                self.parts.append("</details>")
            elif isinstance(block, b.Badge):
                self.badge(block)
            elif isinstance(block, b.Row):
                for blocks in block.columns:
                    self.draw(blocks)
            else:
                raise TypeError(f"not a view block: {block!r}")

    def badge(self, block: b.Badge) -> None:
        """The view's badge: the simulated corpora (with why not to cite them) and the labels."""
        simulated = (f'<span class="simulated" title="{esc(b.SIMULATED_HELP)}">{esc(block.simulated_text)}</span>'
                     if block.simulated else "")
        self.parts.append(f'<p class="badge">{simulated}<span class="labels">{esc(block.labels)}</span></p>')

    def facts(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Name-value pairs (a tour stop's link, slice and choices) in the file's facts box."""
        items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs)
        self.parts.append(f'<dl class="facts">{items}</dl>')

    def jumps(self, targets: Sequence[tuple[str, str]]) -> None:
        """Links within the file: (anchor, text) pairs, anchors being our own ids (``heading``)."""
        links = " · ".join(f'<a href="#{esc(anchor)}">{esc(text)}</a>' for anchor, text in targets)
        self.parts.append(f'<p class="jumps">{links}</p>')

    def pre(self, label: b.Words, body: str) -> None:
        head = f'<div class="label">{self.wh(label)}</div>' if label else ""
        self.parts.append(f'<div class="pre">{head}<pre>{esc(body)}</pre></div>')

    def table(self, frame: pd.DataFrame, name: str, caption: b.Words | None = None,
              download: pd.DataFrame | None = None, styles: pd.DataFrame | None = None,
              links: dict[str, str] | None = None) -> None:
        """``frame`` as an HTML table (sortable by a click on a header), its CSV as a download.

        ``styles``: CSS per cell (our own colours, same shape as ``frame``); ``download``: the
        CSV's frame when the shown cells are text made of numbers (as the app's tables);
        ``links``: column -> the text its cells show as links into the app (``Column.link_text``).
        """
        self.n_tables += 1
        csv = csv_safe(frame if download is None else download).to_csv(index=False)
        head = "".join(f"<th>{esc(str(c))}</th>" for c in frame.columns)
        rows = []
        linked = {j: (links or {})[c] for j, c in enumerate(frame.columns) if c in (links or {})}
        for i, row in enumerate(frame.itertuples(index=False, name=None)):
            cells = []
            for j, value in enumerate(row):
                style = styles.iat[i, j] if styles is not None else ""
                attr = f' style="{esc(style)}"' if style else ""
                shown = esc(cell_text(value))
                if j in linked and isinstance(value, str) and value:
                    href = app_href(value, self.app_url)
                    shown = (f'<a href="{esc(href)}">{esc(linked[j])}</a>' if href else
                             f'<span class="needs-app" title="{NEEDS_APP}">{shown}</span>')
                cells.append(f"<td{attr}>{shown}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        cap = f'<p class="note">{self.wh(caption)}</p>' if caption else ""
        href = "data:text/csv;charset=utf-8," + quote(csv, safe="")
        self.parts.append(
            f'{cap}<div class="table-box"><table class="sortable" data-table="{esc(name)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>'
            f'<p class="download"><a download="{esc(file_name(name))}" href="{esc(href)}">Download CSV</a> '
            f'<span class="note">({len(frame):,} rows; click a column header to sort)</span></p>')

    def figure(self, fig: Any) -> None:
        """An interactive Plotly figure (drawn in the browser from its JSON)."""
        self.n_figures += 1
        ident = f"figure-{self.n_figures}"
        self.data.append(f'<script type="application/json" id="{ident}">{json_text(fig.to_json())}</script>')
        self.parts.append(f'<div class="figure" data-figure="{ident}"></div>')

    def graph(self, page: str) -> None:
        """A trace-graph page (``figures.trace_graph.render_html`` with ``assets.VIS_MARK`` for
        its script), in a frame of its own, as the Explorer draws it."""
        self.n_graphs += 1
        ident = f"graph-{self.n_graphs}"
        self.data.append(f'<script type="application/json" id="{ident}">{script_json(page)}</script>')
        self.parts.append(f'<iframe class="graph" title="trace graph" data-graph="{ident}"></iframe>')

    def render(self, title: str, facts: Sequence[tuple[str, str]]) -> str:
        """The whole file: ``title``, the facts (slice, choices, store version, link, time) as
        a list, the parts, then the libraries it needs (each once) and the loader."""
        items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
        libs = []
        if self.n_figures:
            libs.append(f'<script type="application/octet-stream" id="lib-plotly">{assets.plotly_js()}</script>')
        if self.n_graphs:
            libs.append(f'<script type="application/octet-stream" id="lib-vis">{assets.vis_js()}</script>')
        loader = f"var MARK = {script_json(assets.VIS_MARK)};\n{assets.LOADER}"
        return _PAGE.format(title=esc(title), facts=items, body="\n".join(self.parts), data="\n".join(self.data),
                            libs="\n".join(libs), sort=SORT_SCRIPT, loader=f"(function () {{ {loader} }})();")


SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute("data-sort") !== "asc";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-sort"); });
      th.setAttribute("data-sort", down ? "asc" : "desc");
      function key(row) {
        var t = row.cells[col].textContent.trim(), n = Number(t.replace(/,/g, ""));
        return (t === "—" || t === "") ? null : (isNaN(n) ? t : n);
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null) return 1;
        if (y === null) return -1;
        var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
        return down ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #24292f; margin: 24px auto;
        max-width: 1200px; padding: 0 16px; font-size: 14px; line-height: 1.45; }}
h1 {{ font-size: 26px; margin-bottom: 4px; }} h2 {{ margin-top: 28px; font-size: 20px; }} h3 {{ font-size: 16px; }}
dl.facts {{ display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; background: #f6f8fa;
            border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 14px; }}
dl.facts dt {{ color: #57606a; }} dl.facts dd {{ margin: 0; word-break: break-all; }}
.note {{ color: #57606a; font-size: 13px; }}
.warning {{ background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px; }}
.info {{ background: #ddf4ff; border: 1px solid #54aeff; border-radius: 6px; padding: 6px 10px; }}
.simulated {{ background: #ffebe9; border: 1px solid #ff8182; border-radius: 6px; padding: 6px 10px; font-weight: 600; }}
.badge {{ display: flex; flex-wrap: wrap; gap: 8px; }} .badge span {{ border-radius: 6px; padding: 3px 10px; }}
.needs-app {{ color: #57606a; font-size: 12px; }}
.badge .labels {{ background: #ddf4ff; border: 1px solid #54aeff; }}
.table-box {{ max-height: 560px; overflow: auto; border: 1px solid #d0d7de; border-radius: 4px; }}
table {{ border-collapse: collapse; font-size: 12.5px; width: 100%; }}
th, td {{ border-bottom: 1px solid #eaeef2; padding: 3px 8px; text-align: left; vertical-align: top; white-space: pre-wrap; }}
th {{ position: sticky; top: 0; background: #f6f8fa; cursor: pointer; user-select: none; }}
th[data-sort="asc"]::after {{ content: " ▲"; }} th[data-sort="desc"]::after {{ content: " ▼"; }}
.download {{ margin: 4px 0 14px; }}
.figure {{ width: 100%; min-height: 120px; }}
iframe.graph {{ width: 100%; height: 700px; border: 0; }}
.pre pre {{ white-space: pre-wrap; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; padding: 8px;
            max-height: 400px; overflow: auto; }}
.pre .label {{ color: #57606a; font-weight: 600; }}
.sentence {{ font-size: 17px; border-left: 4px solid #0969da; padding: 4px 12px; white-space: pre-wrap; }}
.jumps {{ margin: 18px 0; }} h2[id^="stop-"] {{ border-top: 2px solid #d0d7de; padding-top: 18px; }}
@media print {{ h2[id^="stop-"] {{ break-before: page; }} .jumps, .download {{ display: none; }} }}
</style></head>
<body>
<h1>{title}</h1>
<dl class="facts">{facts}</dl>
<p class="warning" id="export-problem" hidden></p>
{body}
{data}
{libs}
<script>{sort}</script>
<script>{loader}</script>
</body></html>
"""
