"""The libraries an export carries: plotly.js and vis-network, each once, gzip-compressed.

Why compressed: plotly.js alone is 4.8 MB, so a file inlining it as text could not stay under
the 5 MB a reviewer's mail or a paper's supplement takes. Base64 of its gzip is 2 MB, and the
browser unpacks it with ``DecompressionStream`` (no request: the bytes are in the file), then
runs it as an inline script. The libraries' own source texts mention URLs (licences, map tile
servers plotly never loads here); compressed, the file holds no URL of theirs either.
"""
from __future__ import annotations

import base64
import gzip
from functools import lru_cache

from ..figures.trace_graph import VIS_MARK, vis_assets  # noqa: F401 - the mark the file's loader fills


def _packed(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js, as installed with the plotly package, packed (base64 of gzip)."""
    from plotly.offline import get_plotlyjs

    return _packed(get_plotlyjs())


@lru_cache(maxsize=1)
def vis_js() -> str:
    """vis-network's script, as the Explorer inlines it (from the installed pyvis), packed."""
    return _packed(vis_assets()[0])


# Runs once the page is parsed: unpack the libraries, draw every figure and graph, then mark
# the body ready (a test waits for it). Every datum is read from JSON script elements as text.
LOADER = """
(function () {
  function unpack(id) {
    var el = document.getElementById(id);
    if (!el) return Promise.resolve(null);
    var bin = atob(el.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }
  function data(id) { return JSON.parse(document.getElementById(id).textContent); }
  function fail(message) {
    var box = document.getElementById("export-problem");
    box.textContent = message;
    box.hidden = false;
  }
  if (typeof DecompressionStream === "undefined") {
    fail("This browser cannot unpack the charts and graph of this file (it lacks DecompressionStream); " +
         "open it in a current Chrome, Edge, Firefox or Safari. The tables above and below still read.");
    return;
  }
  Promise.all([unpack("lib-plotly"), unpack("lib-vis")]).then(function (libs) {
    if (libs[0]) {
      var s = document.createElement("script");
      s.textContent = libs[0];
      document.head.appendChild(s);
    }
    document.querySelectorAll("div[data-figure]").forEach(function (div) {
      var spec = data(div.getAttribute("data-figure"));
      Plotly.newPlot(div, spec.data, spec.layout || {}, {responsive: true, displaylogo: false});
    });
    document.querySelectorAll("iframe[data-graph]").forEach(function (frame) {
      var page = data(frame.getAttribute("data-graph"));
      frame.addEventListener("load", function () {
        try {  // the graph page sizes itself: the frame follows it
          var doc = frame.contentDocument;
          frame.style.height = Math.max(doc.documentElement.scrollHeight, 300) + "px";
        } catch (e) { /* keep the default height */ }
      });
      frame.srcdoc = page.split(MARK).join(libs[1] || "");
    });
    document.body.setAttribute("data-ready", "1");
  }).catch(function (e) { fail("The charts of this file could not be drawn: " + e); });
})();
"""
