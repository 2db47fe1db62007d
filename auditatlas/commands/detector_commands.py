"""The ``score``, ``cross-backbone`` and ``detectors`` subcommands of ``auditatlas``.

Both run their jobs through Dask: a local cluster of processes (``--workers``, default 2) or
the cluster at ``--scheduler ADDRESS``; ``--workers 0`` (without ``--scheduler``) runs them in
this process, as everywhere in the CLI. Progress goes to stderr, results to stdout.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..slice_and_labels import SLICE_COLUMNS as SLICE_KEYS
from .argument_types import count, parse_slice, positive_int
from .progress_bar import ProgressBar


def add_parsers(sub: Any) -> None:
    """Add the detector subcommands to the ``auditatlas`` subparsers."""
    from ..detectors import DEFAULT_FEATURE_SET, FEATURE_SETS

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--detector", action="append", required=True, metavar="NAME",
                       help="registry detector (repeatable; 'all' = every one): see `auditatlas detectors`")
        p.add_argument("--slice", action="append", default=[], metavar="KEY=VALUE",
                       help=f"restrict to runs with KEY=VALUE (repeatable; keys: {', '.join(SLICE_KEYS)})")
        p.add_argument("--seeds", type=positive_int, default=1, metavar="N", help="seeds 0..N-1 (default 1)")
        p.add_argument("--feature-set", default=DEFAULT_FEATURE_SET, choices=sorted(FEATURE_SETS), metavar="NAME",
                       help=f"one of: {', '.join(FEATURE_SETS)} (default {DEFAULT_FEATURE_SET})")
        p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (tcp://host:8786); "
                       "default: a local cluster of processes")
        p.add_argument("--workers", type=count, default=2, metavar="N",
                       help="local cluster size when no --scheduler is given (0: this process only; default 2)")

    score = sub.add_parser("score", help="fit and score registry detectors on a slice; write prediction sets")
    common(score)
    score.set_defaults(run=run, writes=True, reads=True)
    cross = sub.add_parser("cross-backbone", help="ROC-AUC of detectors trained on one backbone, tested on another")
    common(cross)
    cross.add_argument("--corpus", help="corpus of the slice to use (default: the first one with labels)")
    cross.add_argument("--json", action="store_true")
    cross.set_defaults(run=run, writes=True, reads=True)
    listing = sub.add_parser("detectors", help="list the detector registry")
    listing.set_defaults(run=lambda args, root: _list())


def _detectors(names: list[str]) -> list[str]:
    from ..detectors.registry import engine_detectors

    out: list[str] = []
    for name in names:
        out.extend(engine_detectors() if name == "all" else [name])
    return list(dict.fromkeys(out))


def run(args: argparse.Namespace, root: Path) -> int:
    """``score`` or ``cross-backbone``; returns the exit code."""
    from ..detectors.request import check_request

    slice_ = parse_slice(args.slice)
    detectors = _detectors(args.detector)
    # Say what is wrong with the request before paying for a cluster.
    import queries

    check_request(queries.runner(root), detectors, slice_, args.feature_set)
    bar = ProgressBar()
    try:
        with _jobs_client(args.scheduler, args.workers, bar) as client:
            if args.command == "score":
                return _score(root, detectors, slice_, args, client, bar)
            return _cross(root, detectors, slice_, args, client, bar)
    finally:
        bar.close()


@contextmanager
def _jobs_client(scheduler: str | None, workers: int, bar: ProgressBar) -> Iterator[Any]:
    """The Dask client the jobs run on, or None (this process) for ``--workers 0`` without a
    scheduler; a local cluster made here is closed on exit."""
    if workers == 0 and not scheduler:
        bar(0.0, "running the jobs in this process")
        yield None
        return
    from ..cluster import client_session

    bar(0.0, "starting the Dask cluster" if not scheduler else f"connecting to {scheduler}")
    with client_session(scheduler, n_workers=workers) as client:
        yield client


def _list() -> int:
    from ..detectors.registry import DETECTORS

    for d in DETECTORS:
        where = "engine" if d.engine else "board only"
        cap = f", max_train {d.max_train:,}" if d.max_train else ""
        print(f"{d.name:<14} {d.supervision:<13} {d.family:<9} {d.title} ({where}{cap})")
    return 0


def _score(root: Path, detectors: list[str], slice_: dict, args: argparse.Namespace, client, bar: ProgressBar) -> int:
    from ..detectors.engine import score

    result = score(root, detectors, slice_, args.seeds, args.feature_set, client=client, progress=bar)
    bar.close()
    bar.tty = False  # the summary follows on its own lines
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for summary in result.sets:
        print(summary.line())
    if result.source is None:
        print("error: no prediction set could be fitted; nothing was written.", file=sys.stderr)
        return 1
    print(f"wrote {len(result.sets)} prediction set(s) into source '{result.source}' of {root} "
          f"in {result.seconds:.1f} s")
    return 0


def _cross(root: Path, detectors: list[str], slice_: dict, args: argparse.Namespace, client, bar: ProgressBar) -> int:
    import numpy as np

    from ..detectors.cross import cross_backbone, require_defined, result_json

    result = cross_backbone(root, detectors, slice_, args.seeds, args.feature_set, corpus=args.corpus,
                            client=client, progress=bar)
    require_defined(result)
    bar.close()
    bar.tty = False
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(result_json(result), indent=2))
        return 0
    print(f"cross-backbone ROC-AUC on {result.corpus} [{result.feature_set}], seeds {result.seeds}: "
          "rows = trained on, columns = tested on (blank: undefined)")
    for m in result.matrices:
        width = max(len(b) for b in m.backbones) + 2
        print(f"\n{m.detector}")
        print(" " * width + "".join(f"{b[:12]:>14}" for b in m.backbones))
        for i, a in enumerate(m.backbones):
            cells = "".join(f"{'':>14}" if np.isnan(v) else f"{v:>14.3f}" for v in m.mean[i])
            print(f"{a:<{width}}{cells}")
        for note in m.notes:
            print(f"  note: {note}")
    return 0
