"""``auditatlas search QUERY [--slice KEY=VALUE ...] [--label L] [--limit N] [--page P] --json``
the search page's answer for scripts and benchmarks.

The answer is the page's (``auditatlas.search.answer.search``), with one difference a script wants:
a missing index of the store's version is built first (the page answers with the text scan
meanwhile), so the command always ranks unless the build fails, which it says on stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..search import LABEL_CHOICES, PAGE_SIZE
from .argument_types import parse_slice, positive_int


def add_parsers(sub: Any) -> None:
    search = sub.add_parser("search", help="ranked full-text search over every step of the slice (BM25, phrases, "
                                           "AND/OR/NOT, agent: and action:)")
    search.add_argument("query", metavar="QUERY", help='e.g. timeout, "tool call failed", agent:planner AND error')
    search.add_argument("--slice", action="append", default=[], metavar="KEY=VALUE",
                        help="restrict to runs with KEY=VALUE (repeatable, as `score --slice`)")
    search.add_argument("--label", choices=LABEL_CHOICES, default="any", help="only steps with this label (default any)")
    search.add_argument("--limit", type=positive_int, default=PAGE_SIZE, metavar="N",
                        help=f"hits per page (default {PAGE_SIZE})")
    search.add_argument("--page", type=positive_int, default=1, metavar="P", help="page of hits (default 1)")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=run, reads=True)


def run(args: argparse.Namespace, root: Path) -> int:
    import queries
    from queries.search import index_for

    from ..search.answer import SearchRequest, search

    request = SearchRequest(args.query, parse_slice(args.slice), args.label, args.page, args.limit)
    choice = index_for(root, wait=True)
    answer = search(request, choice.index, queries.runner(root), choice.unavailable)
    if answer.note:
        print(f"note: {answer.note}", file=sys.stderr)
    if args.json:
        print(json.dumps(answer.as_dict(), indent=2))
        return 0
    print(f"{answer.total:,} steps match; page {answer.request.page} of {answer.pages}"
          f"{' (ranked, BM25)' if answer.ranked else ' (text scan, trace order)'}")
    for hit in answer.hits:
        score = "" if hit.score is None else f"{hit.score:7.3f}  "
        print(f"{score}{hit.run_id} step {hit.step_idx}  [{hit.agent} / {hit.action}, {hit.label}]  "
              f"{hit.found_in}: {' '.join(hit.marked.split())}")
    return 0
