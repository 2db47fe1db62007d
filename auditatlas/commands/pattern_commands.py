"""``auditatlas similar RUN_ID STEP_IDX`` and ``auditatlas clusters``: the Patterns page's answers."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..patterns import DEFAULT_CLUSTERS, DEFAULT_K
from .argument_types import count, parse_slice, positive_int


def add_parsers(sub: argparse._SubParsersAction) -> None:
    similar = sub.add_parser("similar", help="the k steps of the slice most similar to one step (text and step features)")
    similar.add_argument("run_id", metavar="RUN_ID")
    similar.add_argument("step_idx", metavar="STEP_IDX", type=count)
    similar.add_argument("--k", type=positive_int, default=DEFAULT_K, help=f"how many (default {DEFAULT_K})")
    clusters = sub.add_parser("clusters", help="failure clusters of the slice's anomalous (or flagged) steps")
    clusters.add_argument("--seed", type=count, default=0, help="the clustering's seed (default 0)")
    clusters.add_argument("--clusters", type=positive_int, default=DEFAULT_CLUSTERS,
                          help=f"how many clusters (default {DEFAULT_CLUSTERS})")
    for p in (similar, clusters):
        p.add_argument("--slice", action="append", default=[], metavar="KEY=VALUE",
                       help="restrict to a slice (repeatable; e.g. backbone=GPT-4.1)")
        p.add_argument("--json", action="store_true")
        p.set_defaults(run=run, reads=True)


def run(args: argparse.Namespace, root: Path) -> int:
    import queries

    from ..patterns import clusters, similar, vectors

    slice_ = parse_slice(args.slice)
    query = queries.runner(root)
    found = vectors.load(root, query)
    if args.command == "similar":
        result = similar.similar_steps(found, query, args.run_id, args.step_idx, slice_, args.k)
        if args.json:
            print(json.dumps(result.to_json(), indent=2))
            return 0
        print(result.summary)
        for row in result.neighbours.itertuples(index=False):
            label = "unlabeled" if row.label != row.label else ("anomaly" if row.label == 1 else "normal")
            print(f"{row.rank:>3}  {row.similarity:.3f}  {row.run_id}  step {row.step_idx}  {row.backbone}  "
                  f"{row.action}  {label}")
        return 0
    result = clusters.failure_clusters(found, query, slice_, args.seed, args.clusters)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(f"{len(result.members):,} {result.source} in {len(result.clusters)} clusters (seed {result.seed})")
    for c in result.clusters:
        backbones = ", ".join(f"{b} {s:.0%}" for b, s in c.backbones[:3])
        print(f"{c.number:>3}  {c.size:>6} steps  {' '.join(c.top_terms)}  ({backbones})")
    return 0
