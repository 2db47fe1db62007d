"""The Search page as a file: the query, its ranked hits (the page's own search, one page) with
their snippets as text and a link to each step in the Explorer."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...search import QueryTextError, SearchRequest, search
from ...search.index import open_built
from ...views import explorer_url
from ...views.app_link import Link, Query
from ..document import Document


def build(doc: Document, query: Query, link: Link, root: Path) -> None:
    values = link.values
    request = SearchRequest(values["q"], link.slice, values["label"], int(values["page"]))
    index = open_built(root)
    try:
        answer = search(request, index, query, None if index else "the index of this store version is not built")
    except QueryTextError as exc:
        doc.warning(str(exc))
        return
    finally:
        if index is not None:
            index.close()
    doc.heading(f"Search: {request.text}")
    if answer.note:
        doc.text(answer.note, "note")
    doc.text(f"{answer.total:,} steps match{', best first' if answer.ranked else ', in trace order'}; "
             f"page {request.page:,} of {answer.pages:,}. « » mark the words the query matched.")
    rows = pd.DataFrame({
        "score": [None if h.score is None else round(h.score, 3) for h in answer.hits],
        "run": [h.run_id for h in answer.hits], "step": [h.step_idx for h in answer.hits],
        "backbone": [h.backbone for h in answer.hits], "agent": [h.agent for h in answer.hits],
        "action": [h.action for h in answer.hits], "label": [h.label for h in answer.hits],
        "found in": [h.found_in for h in answer.hits],
        "snippet": [" ".join(h.marked.split()) for h in answer.hits],
        "explorer": [explorer_url(h.run_id, h.step_idx, slice=link.slice) for h in answer.hits],
    })
    doc.table(rows, "search-hits")
