"""``auditatlas``: ingest release files, build the demo store, print what the store holds.

Every error a user can cause ends in one clear sentence on stderr and a non-zero exit, never a
traceback: 2 for bad usage, 1 for bad input or an undefined result.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from .cli_types import count, port_number, positive_int, positive_seconds
from .schema import DEFAULT_LABELS, LABEL_CHOICES
from .errors import AtlasError, IngestFailed, first_line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auditatlas",
        description="Audit Atlas: labeled agent traces and detector predictions in one store.",
    )
    parser.add_argument("--store", help="store folder (default: $AUDITATLAS_STORE or ./data/store)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = sub.add_parser("ingest", help="convert a release into the store (replaces that source)")
    _add_ingest_arguments(ingest)
    ingest.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the conversion on the Dask cluster at ADDRESS (the store must be on a shared file system)")
    ingest.add_argument("--workers", type=count, metavar="N",
                        help="local worker processes (0: this process only; default: one per core for large releases)")
    ingest.add_argument("--no-wait", action="store_true",
                        help="fail at once (exit 1) instead of waiting when another writer holds the store")

    demo = sub.add_parser("demo", help="build the embedded default corpus (simulated MAADBench) and the CatchBench release")
    demo.add_argument("--rooms", type=positive_int, default=1500)
    demo.add_argument("--seed", type=count, default=0, help="a whole number >= 0 (default 0)")
    demo.add_argument("--no-catchbench", action="store_true", help="only the simulated corpus")
    demo.add_argument("--no-panel", action="store_true",
                      help="skip the standard detector panel (skipped anyway above "
                           f"{PANEL_MAX_ROOMS:,} rooms: 55 fits on millions of steps take hours)")
    demo.add_argument("--scheduler", metavar="ADDRESS", help="simulate and convert on the Dask cluster at ADDRESS")
    demo.add_argument("--workers", type=count, metavar="N",
                      help="local worker processes (0: this process only; default: one per core for large corpora)")

    receive = sub.add_parser("receive", help="receive OTLP/HTTP spans live into a corpus (POST /v1/traces)")
    _add_receive_arguments(receive)

    remove = sub.add_parser("remove", help="drop one source from the store (see `info` for the names)")
    remove.add_argument("source", metavar="SOURCE")

    info = sub.add_parser("info", help="what the store holds, per corpus")
    info.add_argument("--json", action="store_true")

    sub.add_parser("warm", help="build what every write builds for the store's version with this code (the derived "
                                "tables, the search index, the kept views): after an upgrade, so no page's first "
                                "open waits for it; the app's server starts it when nothing is kept for this code")

    board = sub.add_parser("board", help="print a PRE / LIVE / POST board recomputed from the store")
    board.add_argument("name", metavar="NAME", help="pre, live, post-localization or post-detection")
    board.add_argument("--corpus", help="corpus to score (default: the first one the board applies to)")
    board.add_argument("--labels", choices=tuple(LABEL_CHOICES), default=DEFAULT_LABELS,
                       help="the labels it is scored on (released, as the app's labels=...; reviewed: a verdict "
                            "replaces the released label; agreed: only steps where review and release agree)")
    board.add_argument("--json", action="store_true")

    export = sub.add_parser("export", help="write one view of the app (its link) as a self-contained offline HTML file")
    export.add_argument("url", metavar="URL", help="the app's link, e.g. '/boards?tab=POST' or http://localhost:8501/explorer?run=...")
    export.add_argument("--out", required=True, metavar="FILE.html", help="the file to write")

    reviews = sub.add_parser("reviews", help="reviewers' verdicts (add them with `ingest reviews FILE`)")
    reviews_sub = reviews.add_subparsers(dest="reviews_command", required=True, metavar="ACTION")
    reviews_export = reviews_sub.add_parser("export", help="write every verdict ever given (history included)")
    reviews_export.add_argument("--out", required=True, metavar="FILE", help="FILE.csv or FILE.parquet")
    reviews_agreement = reviews_sub.add_parser(
        "agreement", help="kappa between reviewers and against the release, the confusion table per label process, "
                          "the released labels' error rate from the random order (as /review shows them)")
    reviews_agreement.add_argument("--seed", type=count, metavar="N",
                                   help="the error rate from the random order under this seed only (default: one "
                                        "estimate per seed; seeds are never pooled)")
    reviews_agreement.add_argument("--json", action="store_true")

    from .detectors import cli as detectors_cli  # score, cross-backbone, detectors

    detectors_cli.add_parsers(sub)
    from .patterns import cli as patterns_cli  # similar, clusters

    patterns_cli.add_parsers(sub)
    from .search import cli as search_cli  # search

    search_cli.add_parsers(sub)
    from . import tours_cli  # tours, export-tour

    tours_cli.add_parsers(sub)
    return parser




def _add_ingest_arguments(ingest: argparse.ArgumentParser) -> None:
    """FORMAT, PATH and each adapter option, from the adapters' declarations (``ingest.ADAPTERS``)."""
    from .ingest import ADAPTERS, declared_options, formats_with

    ingest.add_argument("format", choices=sorted(ADAPTERS), metavar="FORMAT",
                        help=f"one of: {', '.join(sorted(ADAPTERS))}")
    optional = formats_with(lambda spec: not spec.needs_path)
    ingest.add_argument("path", nargs="?",
                        help="file or folder" + (f" (optional for {', '.join(optional)})" if optional else ""))
    for name, (option, owners) in declared_options().items():
        ingest.add_argument(f"--{name}", dest=f"option_{name}", metavar=name.upper(), type=option.type,
                            help=f"{', '.join(owners)} only: {option.help}")


def _add_receive_arguments(receive: argparse.ArgumentParser) -> None:
    from .ingest.receiver import DEFAULT_HOST, DEFAULT_PORT, Settings

    default = Settings()
    receive.add_argument("--corpus", required=True, metavar="NAME", help="the corpus the spans become (also its store source)")
    receive.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT} (0: any free port)")
    receive.add_argument("--host", default=DEFAULT_HOST,
                         help=f"address to listen on (default {DEFAULT_HOST}: this machine only; spans carry prompts)")
    receive.add_argument("--idle", type=positive_seconds, default=default.idle_s, metavar="SECONDS",
                         help=f"write a trace once no span of it arrived for this long (default {default.idle_s:g})")
    receive.add_argument("--max-spans", type=positive_int, default=default.max_spans, metavar="N",
                         help=f"spans held in memory; past it requests get 503 + Retry-After (default {default.max_spans:,})")
    receive.add_argument("--max-body-mb", type=positive_int, default=default.max_body // (1024 * 1024), metavar="MB",
                         help="largest request body, before and after decompression (413 past it; default "
                              f"{default.max_body // (1024 * 1024)})")
    receive.add_argument("--max-decoding-mb", type=positive_int, default=default.max_decoding // (1024 * 1024),
                         metavar="MB", help="request bytes read and decoded at once, at least --max-body-mb (decoding "
                                            "takes about 40 times them; past it 503 + Retry-After; default "
                                            f"{default.max_decoding // (1024 * 1024)})")
    # The benchmark's reference only (bench/receive.py): answers before the spans are on disk.
    receive.add_argument("--no-journal", action="store_true", help=argparse.SUPPRESS)


def _ingest_options(args: argparse.Namespace) -> dict:
    """The adapter options given on the command line (the ones left out are not passed)."""
    from .ingest import declared_options

    given = {name: getattr(args, f"option_{name}") for name in declared_options()}
    return {name: value for name, value in given.items() if value is not None}


# The default store scores every registry detector with 5 seeds; above this size that panel
# would take far longer than the corpus itself (run `auditatlas score` on a slice instead).
PANEL_MAX_ROOMS = 20_000




def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .store import store_dir

    root = store_dir(args.store)
    code = _command(args, root)
    if code == 0 and args.command in WRITES and not _adds_verdicts(args):
        _after_write(root)
    return code


def _adds_verdicts(args: argparse.Namespace) -> bool:
    """An ingest that only adds verdicts: no derived table reads them (queries/views.py), so
    there is nothing to build after it."""
    from .ingest import ADAPTERS

    return args.command == "ingest" and ADAPTERS[args.format].appends


# Commands that write the store: the derived tables and the search index of the new version are
# built before the command returns, so the first Detectors view after them does not wait for the
# build and the first search ranks (a write that adds no step keeps the index it had).
WRITES = ("ingest", "remove", "demo", "score", "cross-backbone")


def _after_write(root: Path) -> None:
    """What follows a write that landed: never a failure (exit 0), a warning at most.

    A source the write did not touch may still be unreadable: said, and the derived tables
    (which read every source) are left for the first query after a repair.
    """
    from .store import health

    problems = health(root, deep=True)
    for problem in problems:
        print(f"warning: written, but the store still holds a source it cannot read: {problem}", file=sys.stderr)
    if not problems:
        _warm(root)


def _warm(root: Path, lead: str = "written, but ") -> None:
    """Build what a reader would otherwise wait for, for the store's current version; a part that
    cannot be built is one sentence starting with ``lead``, never a failure."""
    _derive(root, lead)
    _index(root, lead)  # its own read of the steps: built even when the derived tables could not be
    _keep_boards(root, lead)


def _keep_boards(root: Path, lead: str = "written, but ") -> None:
    """What a write keeps for the new version (``auditatlas.kept_views``: every board's default
    view, the supervised half of label doubt, the step vectors and failure clusters, the
    Detectors grid's means), so the first open of /boards, /review, /patterns and /detectors
    after a write reads them (9 s of board scoring
    on the default store, about 50 s at a million rooms; the doubt's fit and the vectors about
    30 s each at 100,000 rooms). ``AUDITATLAS_KEEP_BOARDS=0`` leaves that to the first open."""
    from functools import partial

    from queries.kept import remember, remember_frame, remembering_runner

    from .analyses.board_kept import keeps_after_write
    from .kept_views import keep_for_version

    if not keeps_after_write():
        return
    keep_for_version(root, remembering_runner(root), partial(remember, root), partial(remember_frame, root),
                     failed=lambda what, exc, instead: _say(f"{lead}{what} ({first_line(exc)}); {instead}."))


def _derive(root: Path, lead: str = "written, but ") -> None:
    import queries

    try:
        built = queries.warm(root)
    except Exception as exc:  # noqa: BLE001 - the write has landed: a note, not a failure
        _say(f"{lead}the Detectors page's derived tables could not be built now ({first_line(exc)}); "
             "it will try again on first use.")
        return
    if not built:
        _say("the Detectors page's derived tables could not be built now; it will try again on first use.")


def _index(root: Path, lead: str = "written, but ") -> None:
    from queries.search import ensure_built

    why = ensure_built(root)
    if why is not None:
        _say(f"{lead}the search index could not be built now ({why}); search scans the text until a "
             "build succeeds (the Search page starts one).")


# Commands that read the whole store and answer from it: on a store with a source they cannot
# read they say which, and answer nothing (a number computed without that source is wrong).
READS = ("board", "score", "cross-backbone", "export", "export-tour", "similar", "clusters", "search", "warm")


def _command(args: argparse.Namespace, root: Path) -> int:
    from .detectors import cli as detectors_cli

    if args.command in READS and _refuse_broken(root):
        return 1
    try:
        if args.command == "ingest":
            return _ingest(args.format, args.path, root, _ingest_options(args), wait=not args.no_wait,
                           scheduler=args.scheduler, workers=args.workers)
        if args.command == "remove":
            return _remove(root, args.source)
        if args.command == "receive":
            return _receive(args, root)
        if args.command == "demo":
            return _demo(root, args.rooms, args.seed, not args.no_catchbench,
                         panel=not args.no_panel and args.rooms <= PANEL_MAX_ROOMS,
                         scheduler=args.scheduler, workers=args.workers)
        if args.command == "info":
            return _info(root, args.json)
        if args.command == "warm":
            return _warm_command(root)
        if args.command == "board":
            return _board(root, args.name, args.corpus, args.json, args.labels)
        if args.command == "export":
            return _export(root, args.url, args.out)
        if args.command == "reviews" and args.reviews_command == "agreement":
            return _reviews_agreement(root, args.json, args.seed)
        if args.command == "reviews":
            return _reviews_export(root, args.out)
        if args.command in detectors_cli.COMMANDS:
            return detectors_cli.run(args, root)
        from .patterns import cli as patterns_cli

        if args.command in patterns_cli.COMMANDS:
            return patterns_cli.run(args, root)
        if args.command == "search":
            from .search import cli as search_cli

            return search_cli.run(args, root)
        from . import tours_cli

        if args.command in tours_cli.COMMANDS:
            return tours_cli.run(args, root, _export)
    except IngestFailed as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"error: {len(exc.problems)} problem(s); the store was left unchanged.", file=sys.stderr)
        return 1
    except AtlasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - only a failure of the store (or a file) is turned into a sentence
        sentence = _unreadable(root, exc)
        if sentence is None:
            raise
        print(f"error: {sentence}", file=sys.stderr)
        return 1
    return 2


def _refuse_broken(root: Path) -> bool:
    """Print one sentence per reason the store cannot be read; whether there was one."""
    from .store import health

    problems = health(root, deep=True)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return bool(problems)


def _unreadable(root: Path, exc: Exception) -> str | None:
    """One sentence for an OS or DuckDB error a broken store (or an unreadable file) caused;
    None for anything else (a bug, which keeps its traceback)."""
    from .store import health

    duck = type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb")
    if not (duck or isinstance(exc, OSError)):
        return None
    problems = health(root, deep=True)
    if problems:
        return " ".join(problems)
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename} cannot be read ({exc.strerror or exc}); check its permissions."
    return None


def _say(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _receive(args: argparse.Namespace, root: Path) -> int:
    """Serve until SIGTERM or Ctrl-C, then write what is held (exit 0)."""
    from .ingest.receiver import Receiver, Settings, bind, run

    def say(line: str) -> None:
        print(line, flush=True)

    settings = Settings(idle_s=args.idle, max_spans=args.max_spans, max_body=args.max_body_mb * 1024 * 1024,
                        max_decoding=args.max_decoding_mb * 1024 * 1024, journal=not args.no_journal)
    receiver = Receiver(root, args.corpus, settings, say=say)  # a corpus it may not write: one sentence
    sock = bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    receiver.origin = f"OTLP/HTTP receiver on {host}:{port}"
    say(f"receiving OTLP/HTTP on http://{host}:{port}/v1/traces into corpus '{args.corpus}' of {root} "
        f"(a trace is written after {args.idle:g} s idle; Ctrl-C or SIGTERM writes what is held, then stops)")
    run(receiver, sock)
    if receiver.held.unwritten:
        kept = (f"they stay in the journal {receiver.journal.path} and are written at the next start"
                if receiver.journal is not None else "they are lost")
        print(f"error: stopped with {receiver.held.unwritten} span(s) that could not be written (see above); "
              f"{kept}.", file=sys.stderr)
        return 1
    journal = receiver.journal
    fsyncs = f"; {journal.committed} request(s) journaled in {journal.commits} commit(s)" if journal is not None else ""
    say(f"stopped; {receiver.writes} write(s) to corpus '{args.corpus}'{fsyncs}")
    return 0


def _remove(root: Path, source: str) -> int:
    from .store import remove_source

    if not remove_source(root, source, notify=_say):
        print(f"error: the store at {root} has no source '{source}'.", file=sys.stderr)
        return 1
    print(f"removed source '{source}' from {root}")
    return 0




class _ProgressLine:
    """Progress of a long ingest on stderr: at most one line a second, and the last one."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, info: dict) -> None:
        import time

        from .ingest.stream import format_progress

        now = time.monotonic()
        if now - self.last >= 1.0 or info["done"] >= info["total"]:
            self.last = now
            print(format_progress(info), file=sys.stderr, flush=True)


def _ingest(fmt: str, path: str | None, root: Path, options: dict, wait: bool = True,
            scheduler: str | None = None, workers: int | None = None) -> int:
    """``options``: adapter options by name, checked against the declaration of ``fmt``;
    ``workers`` 0 converts in this process only."""
    from .ingest import ingest, usage_problem

    problem = usage_problem(fmt, path, options)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    parallel = {k: v for k, v in (("scheduler", scheduler), ("workers", workers)) if v is not None}
    batch, entry = ingest(fmt, path, root, wait=wait, notify=_say, progress=_ProgressLine(), **parallel, **options)
    for note in batch.notes:
        print(f"note: {note}", file=sys.stderr)
    rows = ", ".join(f"{n} {t}" for t, n in entry["rows"].items() if n)
    print(f"ingested {fmt} into source '{batch.source}' of {root}: {rows or 'no rows'}")
    return 0


def _demo(root: Path, rooms: int, seed: int, with_catchbench: bool, panel: bool = True,
          scheduler: str | None = None, workers: int | None = None) -> int:
    from .ingest import demo

    def progress(fraction: float, message: str) -> None:
        print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)

    parallel = {"scheduler": scheduler, "workers": workers, "notify": _say}
    if with_catchbench:
        counts = demo.build_default_store(root, rooms=rooms, seed=seed, progress=progress, panel=panel, **parallel)
    else:
        counts = demo.build_demo(root, rooms=rooms, seed=seed, progress=progress, **parallel)
    for sentence in counts.pop("written_but", []):
        print(f"warning: {sentence}", file=sys.stderr)
    print(f"built the simulated default corpus in {root}: {json.dumps(counts, sort_keys=True)}")
    return 0


def _warm_command(root: Path) -> int:
    """A broken store was refused before (READS: what it builds reads every source)."""
    from .store import is_empty

    if is_empty(root):
        print(f"the store at {root} is empty; nothing to build.")
        return 0
    from .analyses.board_kept import KEEP_ENV, keeps_after_write

    _warm(root, lead="")
    left = "" if keeps_after_write() else f" (not the kept views: {KEEP_ENV}=0 leaves them to the first open)"
    print(f"built what the store at {root} needs for this code{left}.")
    return 0


def _info(root: Path, as_json: bool) -> int:
    from .inventory import corpus_counts
    from .store import health, read_manifest

    read_manifest(root)  # a store that is not one: one sentence (StoreError), exit 1
    for problem in health(root, deep=True):
        print(f"warning: {problem}", file=sys.stderr)
    try:
        counts = corpus_counts(root)
    except AtlasError as exc:  # the store's own sentence (the broken source named)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a broken part file: one sentence, not a traceback
        print(f"error: the store at {root} cannot be read ({first_line(exc)}); "
              "re-ingest the source named above or rebuild the store.", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"corpora": counts}, indent=2, sort_keys=True))
        return 0
    if not counts:
        print(f"the store at {root} is empty; run 'auditatlas demo' or 'auditatlas ingest FORMAT PATH'.")
        return 0
    keys = list(next(iter(counts.values())))
    width = max(len(c) for c in counts)
    print(f"store: {root}")
    print(" " * width + "  " + "  ".join(f"{k:>12}" for k in keys))
    for corpus, row in counts.items():
        print(f"{corpus:<{width}}  " + "  ".join(f"{row[k]:>12}" for k in keys))
    return 0


def _board(root: Path, name: str, corpus: str | None, as_json: bool, labels: str = DEFAULT_LABELS) -> int:
    import queries

    from .analyses.board_published import reconcile
    from .analyses.board_registry import run_board
    from .analyses.board_registry import registry
    from .analyses.labels_in_use import board_note, caption_for

    query = queries.runner(root)
    shared = {"labels": labels}
    result = run_board(name, query, corpus, shared if labels != DEFAULT_LABELS else None)
    if as_json:
        print(json.dumps({**result.to_json(), "labels": labels} if labels != DEFAULT_LABELS else result.to_json(), indent=2))
        return 0
    print(f"[{result.pillar}] {result.title} :: {result.corpus}  ({result.n_items} {result.item_kind}; floor: {result.floor})")
    print(caption_for(query, shared))
    note = board_note(shared, registry()[name].task.granularity)
    if note:
        print(f"note: {note}")
    width = max(len(r.entrant) for r in result.rows) + 2
    print(" " * width + "".join(f"{m:>10}" for m in result.metrics) + "  role")
    for row in result.rows:
        cells = "".join(f"{_fmt(row.metrics.get(m)):>10}" for m in result.metrics)
        print(f"{row.entrant:<{width}}{cells}  {row.role}")
    for note in result.notes:
        print(f"note: {note}")
    if result.coverage:
        from .analyses.board_seeds import coverage_line

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


def _export(root: Path, url: str, out: str) -> int:
    import queries

    from .export import export_view

    done = export_view(queries.runner(root), root, url, strict=True)
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


def _reviews_export(root: Path, out: str) -> int:
    """Every verdict, oldest first, as CSV or Parquet (written whole, then renamed into place)."""
    import os
    import tempfile

    import pyarrow as pa

    import queries

    target = Path(out)
    kind = target.suffix.lower()
    if kind not in (".csv", ".parquet"):
        print(f"error: {out}: the file must end in .csv or .parquet.", file=sys.stderr)
        return 2
    from .schema import TABLES

    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        print(f"error: {out}: the folder {folder} does not exist.", file=sys.stderr)
        return 1
    history = pa.Table.from_pandas(queries.run("review_history", root=root), preserve_index=False)
    # pandas turns a whole-number column with gaps into floats: back to the store's types.
    history = history.cast(pa.schema([TABLES["verdicts"].field(c) for c in history.column_names]))
    fd, tmp = tempfile.mkstemp(prefix=".reviews-", suffix=kind, dir=folder)
    os.close(fd)
    try:
        if kind == ".csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(history, tmp)
        else:
            import pyarrow.parquet as pq

            pq.write_table(history, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {history.num_rows} verdict(s) to {target}")
    return 0


def _reviews_agreement(root: Path, as_json: bool, seed: int | None = None) -> int:
    """The Agreement section of /review over the whole store: the same figures, as text or JSON
    (the error rate per seed of the random order, or under ``seed`` alone)."""
    import queries

    from .analyses import review_agreement as ra

    result = ra.agreement(queries.runner(root), seed=seed)
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    sections = [("between reviewers", ra.pairs_frame(result)), ("review against release, per label process",
                                                                 ra.release_frame(result)),
                ("released against reviewed (steps)", ra.confusion_frame(result))]
    for title, frame in sections:
        if frame.empty:
            continue
        print(f"{title}:")
        # A missing kappa is a dash in the table and its sentence below it (the note column is too wide).
        shown = frame.drop(columns=["note"], errors="ignore")
        print(shown.astype(object).where(shown.notna(), "—").to_string(index=False))
        for note in frame.get("note", []):
            if note:
                print(f"  {note}")
        print()
    for rate in result.error_rates:
        print(ra.error_sentence(rate))
    for note in result.notes:
        print(f"note: {note}")
    return 0


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if value != value else f"{value:.3f}"
    return str(value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
