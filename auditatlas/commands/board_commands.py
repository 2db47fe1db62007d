"""``auditatlas board NAME`` (a PRE / LIVE / POST board recomputed from the store) and
``auditatlas export URL --out FILE`` (any view of the app as one offline HTML file)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import AtlasError
from ..slice_and_labels import DEFAULT_LABELS, LABEL_CHOICES


def add_parsers(sub: argparse._SubParsersAction) -> None:
    board = sub.add_parser("board", help="print a PRE / LIVE / POST board recomputed from the store")
    board.add_argument("name", metavar="NAME", help="pre, live, post-localization or post-detection")
    board.add_argument("--corpus", help="corpus to score (default: the first one the board applies to)")
    board.add_argument("--labels", choices=tuple(LABEL_CHOICES), default=DEFAULT_LABELS,
                       help="the labels it is scored on (released, as the app's labels=...; reviewed: a verdict "
                            "replaces the released label; agreed: only steps where review and release agree)")
    board.add_argument("--json", action="store_true")
    board.set_defaults(run=lambda args, root: _board(root, args.name, args.corpus, args.json, args.labels), reads=True)

    export = sub.add_parser("export", help="write one view of the app (its link) as a self-contained offline HTML file")
    export.add_argument("url", metavar="URL", help="the app's link, e.g. '/boards?tab=POST' or http://localhost:8501/explorer?run=...")
    export.add_argument("--out", required=True, metavar="FILE.html", help="the file to write")
    export.add_argument("--app-url", metavar="URL", help=APP_URL_HELP)
    export.set_defaults(run=lambda args, root: export_link(root, args.url, args.out, args.app_url), reads=True)


def _board(root: Path, name: str, corpus: str | None, as_json: bool, labels: str = DEFAULT_LABELS) -> int:
    import queries

    from ..analyses.board_published import reconcile
    from ..analyses.board_registry import board_json, registry, run_board
    from ..analyses.labels_in_use import board_note, caption_for

    query = queries.runner(root)
    shared = {"labels": labels}
    result = run_board(name, query, corpus, shared if labels != DEFAULT_LABELS else None)
    if as_json:
        data = board_json(result)
        print(json.dumps({**data, "labels": labels} if labels != DEFAULT_LABELS else data, indent=2))
        return 0
    print(f"[{result.pillar}] {result.title} :: {result.corpus}  ({result.n_items} {result.item_kind}; floor: {result.floor})")
    print(caption_for(query, shared))
    note = board_note(shared, registry()[name].task.granularity)
    if note:
        print(f"note: {note}")
    from ..analyses.board_seeds import top_group_names

    top = top_group_names(result)
    if top:
        print(f"top group on {result.primary_metric} (no other entrant beats them, Holm-adjusted): {'; '.join(top)}")
    width = max(len(r.entrant) for r in result.rows) + 2
    print(" " * width + "".join(f"{m:>10}" for m in result.metrics) + "  role")
    for row in result.rows:
        cells = "".join(f"{_fmt(row.metrics.get(m)):>10}" for m in result.metrics)
        print(f"{row.entrant:<{width}}{cells}  {row.role}")
    for note in result.notes:
        print(f"note: {note}")
    if result.coverage:
        from ..analyses.board_seeds import coverage_line

        print(f"note: {coverage_line(result.coverage, result.item_kind)}")
    if result.contrasts:
        print("\ncontrasts (Holm-adjusted within family):")
        for c in result.contrasts:
            print(f"  [{c.family}] {c.a_name} - {c.b_name}: {c.diff:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}] "
                  f"p_adj={c.p_adj:.3g} {c.verdict}")
    cells = reconcile(result, query)
    if cells:
        comparable = [c for c in cells if c.delta is not None]
        bad = [c for c in comparable if not c.matches]
        absent = sorted({c.entrant for c in cells if c.delta is None})
        print(f"\npublished vs recomputed: {len(comparable) - len(bad)} of {len(comparable)} recomputable cells within 0.0005")
        for c in bad:
            print(f"  differs: {c.corpus} {c.entrant} {c.metric}: published {c.published:.3f}, recomputed {c.recomputed:.3f}")
        if absent:
            print(f"  not recomputable (no predictions in the store): {', '.join(absent)}")
    return 0


APP_URL_HELP = ("the served app's address, e.g. http://localhost:8501: the file's links into the app lead there "
                "(without it they name the page to open and say that they need the app)")


def export_link(root: Path, url: str, out: str, app_url: str | None = None) -> int:
    import queries

    from ..export import ExportError, export_view
    from ..view_state.state_fields import refusal

    try:
        done = export_view(queries.runner(root), root, url, strict=True, app_url=app_url)
    except ExportError:
        # The page's sentences end with what the page does instead ("using PRE"); the export
        # does nothing instead, it refuses, so that ending is left off.
        from ..views.app_link import parse_link

        problems = parse_link(url).problems
        if not problems:
            raise
        raise AtlasError(" ".join(refusal(p) for p in problems) + " Nothing was written.") from None
    for problem in done.warnings:  # values the store does not hold (a tour's stops' too): in the file as well
        print(f"warning: {problem}", file=sys.stderr)
    path = Path(out)
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_text(done.html, encoding="utf-8")
        tmp.replace(path)  # a reader never opens half a file
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise AtlasError(f"{out} cannot be written ({exc.strerror or exc}).") from exc
    print(f"wrote {path} ({len(done.html.encode('utf-8')) / 1e6:.2f} MB): {done.title}, {done.link.app_link}")
    return 0


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if value != value else f"{value:.3f}"
    return str(value)
