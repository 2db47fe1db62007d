"""The blocks a page's view is made of, drawn by the app (components/view_blocks.py) and by the
export (auditatlas/export/document.py) alike.

A view function computes a page's content once, from its declared state and a query function,
into a list of these blocks; each renderer only draws. No Streamlit here.

Sentences mix our words and the store's data, which is untrusted: a ``Text`` keeps them apart.
Its ``words`` are ours (they may use ``**bold**``, ``*emphasis*`` and ```code```, which both
renderers draw); its ``values`` fill the ``{}`` places in ``words`` and are always drawn as
text (escaped for Markdown in the app, for HTML in the file). A string from elsewhere (an
analysis's note, an error's sentence) goes in as a value: ``Text.plain(sentence)``. Headings,
captions and labels are ``Words``: a plain string is our words alone, a ``Text`` carries values.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import pandas as pd

# Our words alone (a plain string), or our words with values (a ``Text``).
Words = Union[str, "Text"]
# How a sentence is shown: "" plain, note (small print), info, warning, error, success,
# simulated (the "not a released corpus" mark), sentence (a tour author's sentence above a view),
# hint (how to use the app's widgets, "click a cell": drawn by the app, left out of the export).
KINDS = ("", "note", "info", "warning", "error", "success", "simulated", "sentence", "hint")


@dataclass(frozen=True)
class Heading:
    text: Words
    level: int = 2  # 1: the page's title; 2: a section; 3: a part of a section
    anchor: str | None = None  # our own id, for links within the exported file


@dataclass(frozen=True)
class Text:
    words: str
    values: tuple[Any, ...] = ()
    kind: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown text kind {self.kind!r}; one of {KINDS}")

    @classmethod
    def plain(cls, sentence: Any, kind: str = "") -> Text:
        """A sentence that is all data (or built elsewhere): drawn exactly as its text."""
        return cls("{}", (str(sentence),), kind)

    def format(self, escape) -> str:
        """``words`` with each value in its place, strings passed through ``escape`` first (numbers
        keep their format spec, e.g. ``{:,}``). Words without values are taken as they are."""
        if not self.values:
            return self.words
        return self.words.format(*(escape(v) if isinstance(v, str) else v for v in self.values))

    @property
    def sentence(self) -> str:
        """The sentence as plain text (our words' marks left as they are)."""
        return self.format(str)


@dataclass(frozen=True)
class Column:
    """How a table shows one column (the app's column settings; the file shows the cells)."""

    name: str
    label: str | None = None
    help: str | None = None
    width: str | int | None = None  # small, medium, large, or pixels
    link_text: str | None = None  # the cells are links, shown as this text
    pinned: bool = False
    number: bool = False
    format: str | None = None  # a number's printf format in the app, e.g. "%.4g"


@dataclass(frozen=True)
class Table:
    """A table with its CSV: ``download`` where the shown cells are text made of numbers;
    ``styles`` CSS per cell (our own colours, the shape of ``frame``)."""

    frame: pd.DataFrame = field(compare=False)
    name: str  # the CSV's file name and the table's key
    caption: Words | None = None
    download: pd.DataFrame | None = field(default=None, compare=False)
    styles: pd.DataFrame | None = field(default=None, compare=False)
    columns: tuple[Column, ...] = ()
    height: int | None = None
    placeholder: str | None = "—"  # what an empty cell shows in the app (Streamlit would write "None")


@dataclass(frozen=True)
class Metric:
    label: Words
    value: str
    help: str | None = None


@dataclass(frozen=True)
class Metrics:
    """Metrics side by side."""

    items: tuple[Metric, ...]


@dataclass(frozen=True)
class Figure:
    figure: Any = field(compare=False)  # a plotly figure
    key: str = ""  # the app's widget key
    narrow: bool = False  # one small map: the app draws it in the left three fifths of the page


@dataclass(frozen=True)
class Graph:
    page: str = field(repr=False)  # the trace graph's own HTML page (figures.trace_graph)


@dataclass(frozen=True)
class Pre:
    label: Words
    body: str  # untrusted text, kept as typed
    language: str | None = None  # the app's highlighting (e.g. "json"); the file shows the text as it is


@dataclass(frozen=True)
class Facts:
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Jumps:
    targets: tuple[tuple[str, str], ...]  # (anchor, text): links within the exported file


@dataclass(frozen=True)
class Link:
    text: Words
    url: str  # our own link into the app (a page's declared URL)
    help: str | None = None


@dataclass(frozen=True)
class Fold:
    """Blocks folded away under ``label``: an expander in the app, a details element in the file
    (open there, since a file is read whole)."""

    label: Words
    blocks: tuple[Block, ...]
    open: bool = False


@dataclass(frozen=True)
class Badge:
    """The one badge a view wears at its top: which labels its numbers read, and which of its
    corpora are simulated (generated by Audit Atlas, not released: not to be cited)."""

    labels: str  # the labels line (our words and counts only)
    simulated: tuple[str, ...] = ()  # the simulated corpora's names (store values: drawn as text)

    @property
    def simulated_text(self) -> str:
        return f"Simulated data: {', '.join(self.simulated)} (not a released corpus; do not cite)" if self.simulated else ""


SIMULATED_HELP = ("Generated by Audit Atlas's simulator in MAADBench's format. It is not a released corpus: its numbers "
                  "illustrate the tool and are not to be cited.")


def as_text(words: Words) -> Text:
    """Our words alone (a plain string), or a ``Text`` as it is."""
    return words if isinstance(words, Text) else Text(words)


@dataclass(frozen=True)
class Row:
    """Blocks side by side in the app (``widths`` as st.columns takes them); one after the other
    in the file."""

    columns: tuple[tuple[Block, ...], ...]
    widths: tuple[int, ...]
    gap: str | None = None


Block = Heading | Text | Table | Metrics | Figure | Graph | Pre | Facts | Jumps | Link | Fold | Row | Badge
Blocks = Sequence[Block]


def note(words: str, *values: Any) -> Text:
    return Text(words, values, "note")


def info(words: str, *values: Any) -> Text:
    return Text(words, values, "info")


def warning(words: str, *values: Any) -> Text:
    return Text(words, values, "warning")


def error(words: str, *values: Any) -> Text:
    return Text(words, values, "error")


def hint(words: str, *values: Any) -> Text:
    return Text(words, values, "hint")


def say(words: str, *values: Any) -> Text:
    return Text(words, values)


__all__ = ["Badge", "Block", "Blocks", "Column", "Facts", "Figure", "Fold", "Graph", "Heading", "Jumps", "KINDS", "Link",
           "Metric", "Metrics", "Pre", "Row", "SIMULATED_HELP", "Table", "Text", "Words", "as_text", "error", "hint", "info", "note", "say", "warning"]
