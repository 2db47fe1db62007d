"""One search: the request, its ranked page of hits from the index, or today's text scan when
the index of this store version is not there (being built, or failed), said so in ``note``.

The same function answers the page, its export and ``auditatlas search``: one meaning of a
query everywhere. Snippets are plain text with the highlighted ranges beside them; ``marked``
writes them with « » around each highlight, for a table cell (text, never markup).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd
import tantivy

from ..analyses.relabel import chosen_labels, is_released
from ..schema import SLICE_COLUMNS
from ..view_state.state_fields import copy_shared, labels_of
from . import LABEL_CHOICES, PAGE_SIZE, fields
from .index import StepIndex
from .parse import QueryTextError, parse

Query = Callable[..., pd.DataFrame]  # a named query function: (name, params) -> rows

SNIPPET_CHARS = 200
SCAN_CONTEXT = 80  # characters each side of the scan's first match (as the Explorer's list)
MARK_OPEN, MARK_CLOSE = "«", "»"


@dataclass(frozen=True)
class SearchRequest:
    text: str
    slice: Mapping[str, Any] = field(default_factory=dict)
    label: str = "any"
    page: int = 1
    page_size: int = PAGE_SIZE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


@dataclass(frozen=True)
class Hit:
    run_id: str
    step_idx: int
    agent: str
    action: str
    corpus: str
    backbone: str
    label: str
    score: float | None  # BM25; None from the scan (unranked)
    found_in: str  # input | output | another field (agent, action, attributes)
    snippet: str
    highlights: tuple[tuple[int, int], ...]  # [start, end) character ranges of the snippet

    @property
    def marked(self) -> str:
        return marked(self.snippet, self.highlights)


@dataclass(frozen=True)
class SearchAnswer:
    request: SearchRequest
    total: int
    hits: list[Hit]
    ranked: bool
    note: str | None = None  # why the answer is the scan's, or that the slice is empty
    slice_empty: bool = False  # the note says the slice holds no steps: nothing more to say

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.request.page_size))

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.request.text, "slice": copy_shared(self.request.slice, drop_empty=True),
                "label": self.request.label, "page": self.request.page, "page_size": self.request.page_size,
                "total": self.total, "ranked": self.ranked, "note": self.note,
                "hits": [{**asdict(h), "highlights": [list(r) for r in h.highlights],
                          "score": None if h.score is None else round(h.score, 4)} for h in self.hits]}


def marked(snippet: str, highlights: tuple[tuple[int, int], ...]) -> str:
    out, at = [], 0
    for start, end in sorted(highlights):
        if start < at:
            continue
        out += [snippet[at:start], MARK_OPEN, snippet[start:end], MARK_CLOSE]
        at = end
    out.append(snippet[at:])
    return "".join(out)


def search(request: SearchRequest, index: StepIndex | None, query: Query, unavailable: str | None = None) -> SearchAnswer:
    """The page of hits ``request`` asks for: ranked from ``index``, else from the text scan
    (``unavailable`` says why there is no index). QueryTextError for text the engine cannot read."""
    if not request.text.strip():
        raise QueryTextError("Type a word or a phrase to search for.")
    if request.label not in LABEL_CHOICES:
        raise QueryTextError(f"The label '{request.label}' is not one of {', '.join(LABEL_CHOICES)}.")
    if index is not None and (is_released(request.slice) or request.label == "any"):
        answer = _ranked(request, index)
        if not is_released(request.slice):  # the index holds the released labels
            answer = _relabeled(answer, query)
    elif index is not None:
        choice = labels_of(request.slice)
        answer = _scanned(request, query, note=(
            f"The search index holds the released labels, and this view reads the {choice} labels: so the label "
            "filter is answered by the text scan, with the steps whose input or output contains the text as typed "
            "(case-insensitive, operators and quotes taken literally), in trace order, unranked."))
    else:
        answer = _scanned(request, query, unavailable or "the search index is not built")
    if answer.total == 0 and _slice_is_empty(request, query):
        return SearchAnswer(request, 0, [], answer.ranked, "This slice holds no steps; widen the filters in the sidebar.",
                            slice_empty=True)
    return answer


def _ranked(request: SearchRequest, index: StepIndex) -> SearchAnswer:
    parsed = parse(index.index, request.text)
    kept = fields.cells_kept(index.cells, request.slice, request.label)
    if kept == []:  # the slice and label keep no cell: no step to rank
        return SearchAnswer(request, 0, [], ranked=True)
    restricted = restrict(parsed, index.index.schema, kept)
    searcher = index.index.searcher()
    result = searcher.search(restricted, limit=request.page_size, count=True, offset=request.offset)
    generators = {}
    for name in ("input", "output"):
        generators[name] = tantivy.SnippetGenerator.create(searcher, parsed, index.index.schema, name)
        generators[name].set_max_num_chars(SNIPPET_CHARS)
    hits = [_hit(searcher.doc(address), score, generators, index) for score, address in result.hits]
    return SearchAnswer(request, int(result.count or 0), hits, ranked=True)


def restrict(parsed: tantivy.Query, schema: tantivy.Schema, cells: list[int] | None) -> tantivy.Query:
    """``parsed`` restricted to the steps of ``cells`` (``fields.cells_kept``; None: every step)
    inside the engine, before ranking and paging."""
    if cells is None:
        return parsed
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, parsed),
                                        (tantivy.Occur.Must, tantivy.Query.term_set_query(schema, fields.CELL, cells))])


def _first(doc: tantivy.Document, name: str) -> str:
    values = doc.get_all(name)
    return str(values[0]) if values else ""


def _hit(doc: tantivy.Document, score: float, generators: dict, index: StepIndex) -> Hit:
    found_in, snippet, ranges = "another field", _first(doc, "output")[:SNIPPET_CHARS], ()
    for name, generator in generators.items():
        piece = generator.snippet_from_doc(doc)
        spans = tuple((r.start, r.end) for r in piece.highlighted())
        if spans:
            found_in, snippet, ranges = name, piece.fragment(), spans
            break
    cell = index.cell(int(doc.get_first(fields.CELL)))
    return Hit(run_id=_first(doc, "run_id"), step_idx=int(doc.get_first("step_idx")), agent=_first(doc, "agent"),
               action=_first(doc, "action"), corpus=str(cell.get("corpus") or ""),
               backbone=str(cell.get("backbone") or ""), label=str(cell.get(fields.LABEL) or ""), score=float(score),
               found_in=found_in, snippet=snippet, highlights=ranges)


def _relabeled(answer: SearchAnswer, query: Query) -> SearchAnswer:
    """``answer`` with each hit's label under the request's label choice (read from the store)."""
    if not answer.hits:
        return answer
    keys = pd.DataFrame({"run_id": [h.run_id for h in answer.hits], "step_idx": [h.step_idx for h in answer.hits]})
    chosen = chosen_labels(query, answer.request.slice, keys)
    words = {1.0: "anomaly", 0.0: "normal"}
    hits = [replace(h, label=words.get(v, "unlabeled")) for h, v in zip(answer.hits, chosen)]
    return replace(answer, hits=hits)


def _scanned(request: SearchRequest, query: Query, why: str = "", note: str | None = None) -> SearchAnswer:
    text = request.text
    rows = query("step_text_scan", {"slice": dict(request.slice), "regex": phrase_regex(text), "phrase": text,
                                    "actions": [], "field": "both", "label": request.label,
                                    "context": SCAN_CONTEXT, "limit": request.page_size, "offset": request.offset})
    total = int(rows["total"].iloc[0]) if len(rows) else 0
    hits = [Hit(run_id=str(r.run), step_idx=int(r.step), agent=str(r.agent or ""), action=str(r.action or ""),
                corpus=str(r.corpus), backbone=str(r.backbone or ""), label=str(r.label), score=None,
                found_in=str(r.found_in), snippet=str(r.snippet or ""), highlights=_phrase_ranges(str(r.snippet or ""), text))
            for r in rows.itertuples()]
    note = note or (f"Ranked search is not available yet ({why}); these are the steps whose input or output contains "
                    "the text as typed (case-insensitive, operators and quotes taken literally), in trace order, unranked.")
    return SearchAnswer(request, total, hits, ranked=False, note=note)


def phrase_regex(text: str) -> str:
    """The text as a case-insensitive literal RE2 pattern (every character matches itself)."""
    return "(?i)\\Q" + text.replace("\\E", "\\E\\\\E\\Q") + "\\E"


def _phrase_ranges(snippet: str, phrase: str) -> tuple[tuple[int, int], ...]:
    low, needle, ranges, at = snippet.lower(), phrase.lower(), [], 0
    while needle and (found := low.find(needle, at)) >= 0:
        ranges.append((found, found + len(needle)))
        at = found + len(needle)
    return tuple(ranges)


def _slice_is_empty(request: SearchRequest, query: Query) -> bool:
    if not any(request.slice.get(c) for c in SLICE_COLUMNS):
        return False
    summary = query("slice_summary", {"slice": dict(request.slice)})
    return int(summary["steps"].sum()) == 0
