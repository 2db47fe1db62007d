"""The store's own subcommands: ``ingest``, ``demo``, ``receive``, ``remove``, ``info``, ``warm``.

``ingest``, ``demo`` and ``remove`` write the store (the command line builds what a write
keeps afterwards, ``after_write``); ``warm`` builds it for the store as it is, after an upgrade.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import AtlasError, first_line
from . import say
from .argument_types import count, port_number, positive_int, positive_seconds
from .progress_bar import ProgressBar

# The default store scores every registry detector with 5 seeds; above this size that panel
# would take far longer than the corpus itself (run `auditatlas score` on a slice instead).
PANEL_MAX_ROOMS = 20_000


def add_parsers(sub: argparse._SubParsersAction) -> None:
    ingest = sub.add_parser("ingest", help="convert a release into the store (replaces that source)")
    _add_ingest_arguments(ingest)
    ingest.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the conversion on the Dask cluster at ADDRESS (the store must be on a shared file system)")
    ingest.add_argument("--workers", type=count, metavar="N",
                        help="local worker processes (0: this process only; default: one per core for large releases)")
    ingest.add_argument("--no-wait", action="store_true",
                        help="fail at once (exit 1) instead of waiting when another writer holds the store")
    ingest.set_defaults(run=_ingest_command, writes=True)

    demo = sub.add_parser("demo", help="build the embedded default corpus (simulated MAADBench) and the CatchBench release")
    demo.add_argument("--rooms", type=positive_int, default=1500)
    demo.add_argument("--seed", type=count, default=0, help="a whole number >= 0 (default 0)")
    demo.add_argument("--no-catchbench", action="store_true", help="only the simulated corpus")
    demo.add_argument("--no-panel", action="store_true",
                      help="skip the standard detector panel (skipped anyway above "
                           f"{PANEL_MAX_ROOMS:,} rooms: a fit of every detector and seed on millions of steps takes hours)")
    demo.add_argument("--scheduler", metavar="ADDRESS", help="simulate and convert on the Dask cluster at ADDRESS")
    demo.add_argument("--workers", type=count, metavar="N",
                      help="local worker processes (0: this process only; default: one per core for large corpora)")
    demo.set_defaults(run=_demo_command, writes=True)

    receive = sub.add_parser("receive", help="receive OTLP/HTTP spans live into a corpus (POST /v1/traces)")
    _add_receive_arguments(receive)
    receive.set_defaults(run=_receive)

    remove = sub.add_parser("remove", help="drop one source from the store (see `info` for the names)")
    remove.add_argument("source", metavar="SOURCE")
    remove.set_defaults(run=lambda args, root: _remove(root, args.source), writes=True)

    info = sub.add_parser("info", help="what the store holds, per corpus")
    info.add_argument("--json", action="store_true")
    info.set_defaults(run=lambda args, root: _info(root, args.json))

    warm = sub.add_parser("warm", help="build what every write builds for the store's version with this code (the "
                                       "derived tables, the search index, the kept views): after an upgrade, so no "
                                       "page's first open waits for it; the app's server starts it when nothing is "
                                       "kept for this code")
    warm.set_defaults(run=lambda args, root: _warm_command(root), reads=True)


def _ingest_command(args: argparse.Namespace, root: Path) -> int:
    return _ingest(args.format, args.path, root, _ingest_options(args), wait=not args.no_wait,
                   scheduler=args.scheduler, workers=args.workers)


def _demo_command(args: argparse.Namespace, root: Path) -> int:
    return _demo(root, args.rooms, args.seed, not args.no_catchbench,
                 panel=not args.no_panel and args.rooms <= PANEL_MAX_ROOMS,
                 scheduler=args.scheduler, workers=args.workers)


def adds_verdicts(args: argparse.Namespace) -> bool:
    """An ingest that only adds verdicts: no derived table reads them (queries/views.py), so
    there is nothing to build after it."""
    from ..ingest import ADAPTERS

    return args.command == "ingest" and ADAPTERS[args.format].appends


def _add_ingest_arguments(ingest: argparse.ArgumentParser) -> None:
    """FORMAT, PATH and each adapter option, from the adapters' declarations (``ingest.ADAPTERS``)."""
    from ..ingest import ADAPTERS, declared_options, formats_with

    ingest.add_argument("format", choices=sorted(ADAPTERS), metavar="FORMAT",
                        help=f"one of: {', '.join(sorted(ADAPTERS))}")
    optional = formats_with(lambda spec: not spec.needs_path)
    ingest.add_argument("path", nargs="?",
                        help="file or folder" + (f" (optional for {', '.join(optional)})" if optional else ""))
    for name, (option, owners) in declared_options().items():
        ingest.add_argument(f"--{name}", dest=f"option_{name}", metavar=name.upper(), type=option.type,
                            help=f"{', '.join(owners)} only: {option.help}")


def _add_receive_arguments(receive: argparse.ArgumentParser) -> None:
    from ..ingest.receiver import DEFAULT_HOST, DEFAULT_PORT, Settings

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
    from ..ingest import declared_options

    given = {name: getattr(args, f"option_{name}") for name in declared_options()}
    return {name: value for name, value in given.items() if value is not None}


def _receive(args: argparse.Namespace, root: Path) -> int:
    """Serve until SIGTERM or Ctrl-C, then write what is held (exit 0)."""
    from ..ingest.receiver import Settings, bind, run
    from ..ingest.receiver.service import Receiver

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
    from ..store import remove_source

    if not remove_source(root, source, notify=say):
        print(f"error: the store at {root} has no source '{source}'.", file=sys.stderr)
        return 1
    print(f"removed source '{source}' from {root}")
    return 0


def _ingest(fmt: str, path: str | None, root: Path, options: dict, wait: bool = True,
            scheduler: str | None = None, workers: int | None = None) -> int:
    """``options``: adapter options by name, checked against the declaration of ``fmt``;
    ``workers`` 0 converts in this process only."""
    from ..ingest import ingest, usage_problem

    problem = usage_problem(fmt, path, options)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    parallel = {k: v for k, v in (("scheduler", scheduler), ("workers", workers)) if v is not None}
    bar = ProgressBar()
    try:
        batch, entry = ingest(fmt, path, root, wait=wait, notify=say, progress=bar, **parallel, **options)
    finally:
        bar.close()
    for note in batch.notes:
        print(f"note: {note}", file=sys.stderr)
    rows = ", ".join(f"{n} {t}" for t, n in entry["rows"].items() if n)
    print(f"ingested {fmt} into source '{batch.source}' of {root}: {rows or 'no rows'}")
    return 0


def _demo(root: Path, rooms: int, seed: int, with_catchbench: bool, panel: bool = True,
          scheduler: str | None = None, workers: int | None = None) -> int:
    from ..ingest import demo

    parallel = {"scheduler": scheduler, "workers": workers, "notify": say}
    bar = ProgressBar()
    try:
        if with_catchbench:
            counts = demo.build_default_store(root, rooms=rooms, seed=seed, progress=bar, panel=panel, **parallel)
        else:
            counts = demo.build_demo(root, rooms=rooms, seed=seed, progress=bar, **parallel)
    finally:
        bar.close()
    for sentence in counts.pop("written_but", []):
        print(f"warning: {sentence}", file=sys.stderr)
    print(f"built the simulated default corpus in {root}: {json.dumps(counts, sort_keys=True)}")
    return 0


def _warm_command(root: Path) -> int:
    """A broken store was refused before (READS: what it builds reads every source)."""
    from ..store import is_empty

    if is_empty(root):
        print(f"the store at {root} is empty; nothing to build.")
        return 0
    from ..after_write import warm
    from ..analyses.board_kept import KEEP_ENV, keeps_after_write

    warm(root, say, lead="")
    left = "" if keeps_after_write() else f" (not the kept views: {KEEP_ENV}=0 leaves them to the first open)"
    print(f"built what the store at {root} needs for this code{left}.")
    return 0


def _info(root: Path, as_json: bool) -> int:
    from ..inventory import corpus_counts
    from ..store import health, read_manifest

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
