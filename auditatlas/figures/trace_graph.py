"""Draw a run's dependency graph (auditatlas.graph) with pyvis, fully offline, as text only (the Explorer and the export).

Why a template of our own instead of pyvis's ``generate_html``: pyvis's page pulls bootstrap
from a CDN even with ``cdn_resources="in_line"``, and when any node title contains ``href`` it
switches to a popup that sets ``innerHTML`` from the title (trace text would become markup).
So pyvis builds the nodes, edges and options (``Network.get_network_data``) and we write the
page: vis-network's script and stylesheet inlined from the installed pyvis package, the data
as JSON with ``<``, ``>``, ``&`` escaped (a ``</script>`` inside trace text stays a string), and
tooltips as plain strings, which vis-network 9 puts in ``innerText``. Graph labels are drawn
on a canvas, so they are text by construction.

Visual channels, chosen so every mark reads apart from the others:

- fill colour: the step's agent or action (legend);
- shape: ground truth (dot normal, diamond anomaly, square unlabeled, star the human
  decisive step) — unlabeled never looks normal;
- border: the chosen prediction set's decision (TP solid green, FP solid orange, FN dashed
  red, TN thin grey, flagged-but-unlabeled solid black), also spelled in the label;
- label lines: step number and action, then the detector cell and the chain role;
- edges: colour by kind, dash by provenance (solid observed, dashed modeled, dotted inferred).

The graph opens fitted to its frame, labels readable (at least 12 px): the trace wraps into rows
as wide as the frame, one row per scope when the scopes take turns, and the frame grows with
the rows up to a bound (past it, the graph opens on its first rows and the hint says so).
"""
from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the export's document imports this module on every page
    import networkx as nx

from auditatlas import actions
from auditatlas import graph as tg

PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#8dd3c7", "#ffffb3", "#bebada",
           "#fccde5", "#d9d9d9", "#ccebc5", "#ffed6f", "#80b1d3", "#e5c494")
OTHER_COLOR = "#eeeeee"
SHAPES = {tg.NORMAL: "dot", tg.ANOMALY: "diamond", tg.UNLABELED: "square"}
DECISIVE_SHAPE = "star"
SHAPE_GLYPH = {"dot": "●", "diamond": "◆", "square": "■", "star": "★"}
OUTCOME_BORDER = {  # colour, width, dashed
    tg.TP: ("#1a7f37", 5, False),
    tg.FP: ("#e36209", 5, False),
    tg.FN: ("#cf222e", 5, True),
    tg.TN: ("#8c959f", 1, False),
}
FLAGGED_UNLABELED_BORDER = ("#111111", 5, False)
PLAIN_BORDER = ("#57606a", 1, False)
OUTCOME_WORDS = {tg.TP: "TP: flagged, anomaly", tg.FP: "FP: flagged, normal", tg.FN: "FN: missed anomaly",
                 tg.TN: "TN: not flagged, normal"}
EDGE_COLORS = {"data": "#0969da", "tool_parent": "#8250df", "puzzle_sequence": "#6e7781", "context": "#afb8c1",
               "handoff": "#24292f", "tool_call": "#1b7c83", "read_write": "#9a6700",
               "child": "#bf3989", "link": "#953800"}  # child, link: OTLP parent and span links
EDGE_DASHES: dict[str, Any] = {"observed": False, "modeled": [10, 6], "inferred": [2, 5]}
LABEL_CHARS = 22
# A step's label under its node: number + action, whole up to this many characters (a trace of
# your own names actions KIND:name, e.g. AGENT:invoke_agent); the columns widen to the run's
# widest label (column_px), so labels never overlap.
NODE_ACTION_CHARS = 20
DY = 92.0  # row spacing (px at zoom 1): a node and two label lines, with a gap
FONT_PX = 14  # label size at zoom 1
# Column spacing: the run's widest step label, whole (monospace: 0.6 em a character), plus a gap,
# so neighbouring labels never overlap; between these bounds (px at zoom 1).
CHAR_PX, LABEL_GAP_PX, MIN_DX, MAX_DX = 0.6 * FONT_PX, 14.0, 72.0, 14.0 + 0.6 * FONT_PX * (NODE_ACTION_CHARS + 4)
# The graph opens fitted to its frame, at a zoom between these: at READ_SCALE a label is
# FONT_PX * 0.9 = 12.6 px, the least that reads without zooming; above MAX_SCALE a short run
# would open in giant letters.
READ_SCALE, MAX_SCALE = 0.9, 1.4
BAND_GAP = 30  # extra space between bands of rows when a trace of overlapping lanes wraps
# The frame grows with the rows the run wraps into, between these heights (CSS px); a run that
# needs more opens readable on its first rows (or the open step's) and the reader drags on.
FRAME_PAD, MIN_FRAME, MAX_FRAME = 140, 220, 960
TOOLTIP_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def text(value: Any, limit: int | None = None) -> str:
    """A data string for a canvas label or a plain-text tooltip: no control characters, trimmed."""
    s = "" if value is None else _CONTROL.sub(" ", str(value))
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 1)] + "…"
    return s


def categories(g: nx.MultiDiGraph, color_by: str) -> list[str]:
    """The agents or actions of the run, in pipeline order (actions) or by name (agents)."""
    values = {text(d.get(color_by)) or "—" for _, d in g.nodes(data=True) if d.get("kind") == "step"}
    key = actions.sort_key if color_by == "action" else (lambda v: (0, v))
    return sorted(values, key=key)


def palette(names: list[str]) -> dict[str, str]:
    return {n: PALETTE[i] if i < len(PALETTE) else OTHER_COLOR for i, n in enumerate(names)}


def node_action(action: Any) -> str:
    """The action under a node: its short name; a KIND:name too long to show whole drops its
    kind (the tooltip keeps the whole action); what is still too long is cut."""
    name = actions.short(text(action))
    kind, colon, rest = name.partition(":")
    if len(name) > NODE_ACTION_CHARS and colon and rest and kind.isupper():
        name = rest
    return text(name, NODE_ACTION_CHARS)


def _step_label(d: Mapping) -> str:
    lines = [f"{d['step_idx']} {node_action(d.get('action'))}".rstrip()]
    marks = [m for m in (d.get("outcome") if d.get("outcome") != tg.TN else None,
                         "flagged" if d.get("flagged") and d.get("truth") == tg.UNLABELED else None,
                         d.get("role")) if m]
    if marks:
        lines.append(" · ".join(marks))
    return "\n".join(lines)


def column_px(g: nx.MultiDiGraph) -> float:
    """The run's column spacing (px at zoom 1): its widest step label line, plus a gap."""
    widest = max((len(line) for _, d in g.nodes(data=True) if d.get("kind") == "step"
                  for line in _step_label(d).split("\n")), default=0)
    return float(min(MAX_DX, max(MIN_DX, widest * CHAR_PX + LABEL_GAP_PX)))


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _step_tooltip(d: Mapping) -> str:
    # Who&When's is a human's pick; a labels file's or an annotation's is the user's own label.
    who = "human decisive step" if d.get("label_source") == tg.DECISIVE_SOURCE else "decisive step, your labels"
    truth = d["truth"] + (f" ({who})" if d.get("decisive") else "")
    lines = [
        f"step {d['step_idx']} · {text(d.get('action'), 60)}",
        f"agent: {text(d.get('agent'), 60)}",
        f"scope: {text(d.get('scope'), 80)}",
        f"ground truth: {truth}" + (f" [{text(d.get('label_source'), 40)}]" if d.get("label_source") else ""),
    ]
    if d.get("error_code"):
        lines.append(f"error: {text(d['error_code'], 120)}")
    if d.get("failure_mode"):
        lines.append(f"failure mode: {text(d['failure_mode'], 40)}" + (" (cascade)" if d.get("is_cascade") else ""))
    if d.get("role"):
        lines.append(f"chain role: {d['role']}")
    if d.get("score") is not None or d.get("flagged"):
        cell = d.get("outcome") or ("flagged (unlabeled)" if d.get("flagged") else "not flagged (unlabeled)")
        lines.append(f"detector: score {_fmt(d.get('score'))}, rank {_fmt(d.get('rank'))} → {cell}")
    return text("\n".join(lines), TOOLTIP_CHARS * 3)


def _border(d: Mapping) -> tuple[str, int, bool]:
    if d.get("outcome") in OUTCOME_BORDER:
        return OUTCOME_BORDER[d["outcome"]]
    if d.get("flagged"):
        return FLAGGED_UNLABELED_BORDER
    return PLAIN_BORDER


def _scope_label(d: Mapping, run_id: str | None) -> str:
    name = "run" if run_id is not None and d["scope"] == run_id else text(d["scope"], LABEL_CHARS)
    parts = [f"{name} · steps {d['first_idx']}–{d['last_idx']} ({d['n_steps']})",
             f"{d['n_anomalies']} anomalies · {d['n_unlabeled']} unlabeled"]
    if d.get("n_flagged"):
        cells = ", ".join(f"{k} {v}" for k, v in d.get("outcomes", {}).items() if k != tg.TN)
        parts.append(f"{d['n_flagged']} flagged" + (f" ({cells})" if cells else ""))
    return "\n".join(parts)


def network(g: nx.MultiDiGraph, positions: Mapping[Any, tuple[float, float]], color_by: str = "agent",
            selected: int | None = None, dx: float = MIN_DX):
    """A pyvis Network with fixed positions (trace order left to right, one lane per scope)."""
    from pyvis.network import Network

    net = Network(width="100%", directed=True, cdn_resources="in_line")  # the page sizes the frame
    colors = palette(categories(g, color_by))
    run_id = g.graph.get("run_id")
    for n, d in g.nodes(data=True):
        x, y = positions[n]
        if d.get("kind") == "scope":
            has_anomaly = d["n_anomalies"] > 0
            net.add_node(
                str(n), label=_scope_label(d, run_id), shape="box", x=x, y=y, physics=False,
                color={"background": "#f6f8fa", "border": "#cf222e" if has_anomaly else "#57606a",
                       "highlight": {"background": "#fff8c5", "border": "#9a6700"}},
                borderWidth=3 if has_anomaly else 1, title=text(_scope_label(d, run_id).replace("\n", " · ")),
                font={"face": "monospace", "size": FONT_PX},
            )
            continue
        border, width, dashed = _border(d)
        fill = colors.get(text(d.get(color_by)) or "—", OTHER_COLOR)
        shape = DECISIVE_SHAPE if d.get("decisive") else SHAPES[d["truth"]]
        size = 16 if d["truth"] == tg.NORMAL else 19
        extra = {}
        if n == selected:  # bigger, with a halo: the border keeps telling the detector cell
            size = int(size * 1.5)
            extra["shadow"] = {"enabled": True, "color": "rgba(5,80,174,0.85)", "size": 22, "x": 0, "y": 0}
        net.add_node(
            str(n), label=_step_label(d), shape=shape, x=x, y=y, physics=False, size=size, **extra,
            color={"background": fill, "border": border, "highlight": {"background": fill, "border": border}},
            borderWidth=width, borderWidthSelected=width + 3,
            shapeProperties={"borderDashes": [6, 4] if dashed else False},
            title=_step_tooltip(d),
            font={"face": "monospace", "size": FONT_PX, "bold": {"size": FONT_PX + 2}},
        )
    lanes = {n: positions[n][1] for n in g.nodes}
    for u, v, d in g.edges(data=True):
        span = abs(positions[v][0] - positions[u][0])
        same_lane = lanes[u] == lanes[v]
        count = int(d.get("count", 1))
        curved = same_lane and span > dx * 1.5  # skip-edges along one lane would hide under the chain
        title = f"{text(d.get('kind'))} ({text(d.get('provenance'))})" + (f" × {count}" if count > 1 else "")
        net.add_edge(
            str(u), str(v), color=EDGE_COLORS.get(d.get("kind"), "#57606a"),
            dashes=EDGE_DASHES.get(d.get("provenance"), [4, 4]), width=1.5 + (math.log2(count) if count > 1 else 0),
            smooth={"enabled": True, "type": "curvedCW", "roundness": 0.25} if curved else {"enabled": False},
            title=text(title), arrows="to",
        )
    net.set_options(json.dumps({
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 120, "navigationButtons": False, "multiselect": False,
                        "zoomView": True, "dragView": True},
        "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.6}}},
        "nodes": {"font": {"multi": False}},
    }))
    return net


# Where a trace-graph page built for a view block wants vis-network's script: the app puts the
# script there when it draws the page (``fill_vis``), the export fills it in the browser from the
# file's one compressed copy. A JavaScript comment, so a page left unfilled fails visibly, not oddly.
VIS_MARK = "/*auditatlas-export:vis-network*/"


def fill_vis(page: str) -> str:
    """A page built with ``vis_script=VIS_MARK`` with vis-network's script in the mark's place."""
    return page.replace(VIS_MARK, vis_assets()[0], 1)


@lru_cache(maxsize=1)
def vis_assets() -> tuple[str, str]:
    """vis-network's script and stylesheet, read from the installed pyvis package (no CDN)."""
    import pyvis

    lib = Path(pyvis.__file__).resolve().parent / "templates" / "lib" / "vis-9.1.2"
    return (lib / "vis-network.min.js").read_text(encoding="utf-8"), (lib / "vis-network.css").read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no '<', '>', '&' or line separators can end it."""
    s = json.dumps(value, ensure_ascii=False)
    return (s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def legend_html(g: nx.MultiDiGraph, color_by: str, has_detector: bool) -> str:
    """The legend under the graph; every data name is HTML-escaped."""
    esc = html.escape
    colors = palette(categories(g, color_by))
    swatches = "".join(f'<span class="sw"><i style="background:{c}"></i>{esc(n)}</span>' for n, c in colors.items())
    shapes = "".join(f'<span class="sw">{SHAPE_GLYPH[s]} {w}</span>' for w, s in
                     (("normal", "dot"), ("anomaly", "diamond"), ("unlabeled (no verdict)", "square"),
                      ("decisive step" if any(d.get("decisive") and d.get("label_source") != tg.DECISIVE_SOURCE
                                              for _, d in g.nodes(data=True)) else "human decisive step", "star")))
    borders = ""
    if has_detector:
        borders = "".join(
            f'<span class="sw"><i style="border:{3 if w > 1 else 1}px {"dashed" if dash else "solid"} {c};background:#fff"></i>'
            f"{esc(OUTCOME_WORDS[o])}</span>" for o, (c, w, dash) in OUTCOME_BORDER.items())
        borders += f'<span class="sw"><i style="border:3px solid {FLAGGED_UNLABELED_BORDER[0]};background:#fff"></i>flagged, unlabeled</span>'
    kinds = sorted({d.get("kind") for _, _, d in g.edges(data=True)} - {None})
    provs = sorted({d.get("provenance") for _, _, d in g.edges(data=True)} - {None})
    edges = "".join(f'<span class="sw"><b style="background:{EDGE_COLORS.get(k, "#57606a")}"></b>{esc(str(k))}</span>'
                    for k in kinds)
    dash_css = {"observed": "solid", "modeled": "dashed", "inferred": "dotted"}
    edges += "".join(f'<span class="sw"><b class="ln" style="border-top:2px {dash_css.get(p, "dashed")} #333"></b>{esc(str(p))}</span>'
                     for p in provs)
    rows = [f"<div><em>fill = {esc(color_by)}</em> {swatches}</div>"] if colors else []
    rows.append(f"<div><em>shape = ground truth</em> {shapes}</div>")
    if any(d.get("kind") == "scope" for _, d in g.nodes(data=True)):
        rows.append('<div><em>boxes</em> <span class="sw">a collapsed scope: its step range, anomalies, '
                    'unlabeled steps and flags (red border: holds an anomaly)</span></div>')
    if borders:
        rows.append(f"<div><em>border = detector</em> {borders}</div>")
    rows.append("<div><em>labels</em> <span class=\"sw\">origin / mid / down = place in a propagation chain</span></div>")
    if edges:
        rows.append(f"<div><em>edges</em> {edges}</div>")
    return '<div class="legend">' + "".join(rows) + "</div>"


# The page's HTML, CSS and script: a resource file beside this module, its ``@@name@@`` places
# filled by ``render_html`` (one pass: a value is never read for places).
_PLACE = re.compile(r"@@(\w+)@@")


@lru_cache(maxsize=1)
def _page_template() -> str:
    return (Path(__file__).with_name("trace_graph_page.html")).read_text(encoding="utf-8")


def _fill(template: str, **values: Any) -> str:
    return _PLACE.sub(lambda m: str(values[m.group(1)]), template)



def render_html(g: nx.MultiDiGraph, color_by: str = "agent", selected: int | None = None,
                has_detector: bool = False, vis_script: str | None = None) -> str:
    """The whole self-contained page for one run graph (no request leaves it).

    The frame's height and the rows the trace wraps into are chosen in the browser, from the
    frame's width (only known there): see ``arrange`` in the page's script. ``vis_script``
    stands in for vis-network's script (the export puts a mark there and fills it in the
    browser from the one compressed copy its file carries).
    """
    dx = column_px(g)
    positions = tg.layout(g, dx=dx, dy=DY, pack=True)
    net = network(g, positions, color_by=color_by, selected=selected, dx=dx)
    nodes, edges, _heading, _height, _width, options = net.get_network_data()
    vis_js, vis_css = vis_assets()
    selected_id = str(selected) if selected is not None and selected in g else None
    return _fill(
        _page_template(),
        vis_css=vis_css, vis_js=vis_js if vis_script is None else vis_script, legend=legend_html(g, color_by, has_detector),
        dx=dx, dy=DY, edge=dx / 2 + LABEL_GAP_PX, band_gap=BAND_GAP, box_columns=tg.SCOPE_COLUMNS, packed=script_json(tg.lanes_take_turns(g)),
        lane_word=script_json(g.graph.get("lanes", "scope")),
        read_scale=READ_SCALE, max_scale=MAX_SCALE, frame_pad=FRAME_PAD, min_frame=MIN_FRAME, max_frame=MAX_FRAME,
        nodes=script_json(nodes), edges=script_json(edges),
        options=script_json(net.options if isinstance(net.options, dict) else json.loads(options)),
        selected=script_json(selected_id),
    )


def page_for_run(steps, edges, scores, top_k: int | None, threshold: float | None, run_id: str,
                 selected: int | None, color_by: str, show_context: bool, collapsed: tuple[str, ...],
                 has_detector: bool, vis_script: str | None = None, lanes: str = "scope", own: bool = False) -> str:
    """Build, mark, filter, collapse and render one run's graph (the whole path the page takes);
    ``own``: flag the set's own decisions instead of ``top_k`` or ``threshold``."""
    g = tg.build(steps, edges, run_id, lanes=lanes)
    rule = tg.DecisionRule(own=True) if own else (
        tg.DecisionRule(top_k=top_k, threshold=threshold) if (top_k is not None or threshold is not None) else None)
    tg.mark(g, scores, rule)
    view = tg.collapse(tg.visible(g, show_context), collapsed)
    return render_html(view, color_by=color_by, selected=selected, has_detector=has_detector, vis_script=vis_script)
