"""``auditatlas reviews export`` and ``auditatlas reviews agreement``: reviewers' verdicts
(given on /review, added with ``ingest reviews FILE``) for scripts and other stores."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .argument_types import count


def add_parsers(sub: argparse._SubParsersAction) -> None:
    reviews = sub.add_parser("reviews", help="reviewers' verdicts (add them with `ingest reviews FILE`)")
    reviews_sub = reviews.add_subparsers(dest="reviews_command", required=True, metavar="ACTION")
    reviews_export = reviews_sub.add_parser("export", help="write every verdict ever given (history included)")
    reviews_export.add_argument("--out", required=True, metavar="FILE", help="FILE.csv or FILE.parquet")
    reviews_export.set_defaults(run=lambda args, root: _reviews_export(root, args.out))
    reviews_agreement = reviews_sub.add_parser(
        "agreement", help="kappa between reviewers and against the release, the confusion table per label process, "
                          "the released labels' error rate from the random order (as /review shows them)")
    reviews_agreement.add_argument("--seed", type=count, metavar="N",
                                   help="the error rate from the random order under this seed only (default: one "
                                        "estimate per seed; seeds are never pooled)")
    reviews_agreement.add_argument("--json", action="store_true")
    reviews_agreement.set_defaults(run=lambda args, root: _reviews_agreement(root, args.json, args.seed))


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
    from ..schema import TABLES

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

    from ..analyses import review_agreement as ra

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
