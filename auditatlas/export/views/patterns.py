"""The Patterns page as a file: the steps like the link's step and the failure clusters of the
slice, with the open cluster's steps (the same analyses and tables as pages/patterns.py)."""
from __future__ import annotations

from pathlib import Path

from ...errors import AtlasError
from ...patterns import clusters, similar, tables, vectors
from ...views.app_link import Link, Query
from ..document import Document


def build(doc: Document, query: Query, link: Link, root: str | Path) -> None:
    values, slice_ = link.values, link.slice
    found = vectors.load(root, query)
    doc.heading("Steps like this one")
    if values["run"]:
        try:
            nearest = similar.similar_steps(found, query, values["run"], int(values["step"] or 0), slice_,
                                            int(values["k"]))
        except AtlasError as exc:
            doc.warning(str(exc))
        else:
            doc.text(nearest.summary)
            doc.text("Similarity = 0.6 × text cosine (TF-IDF words) + 0.2 same action + 0.1 same agent + 0.05 position "
                     "+ 0.05 size; 1 = the same step.", "note")
            doc.table(tables.neighbour_rows(nearest, slice_), "similar-steps")
    else:
        doc.text("The link chooses no step (it has no run=...).", "info")
    doc.heading("Failure clusters")
    try:
        result = clusters.failure_clusters(found, query, slice_, int(values["seed"]), n_clusters=int(values["clusters"]))
    except AtlasError as exc:
        doc.warning(str(exc))
        return
    doc.text(f"{len(result.members):,} {result.source} in {len(result.clusters)} clusters (seed {result.seed}).")
    doc.table(tables.cluster_rows(result), "clusters")
    number = values["cluster"]
    if number is None:
        return
    if number not in [c.number for c in result.clusters]:
        doc.warning(f"The link's cluster {number} is not among the {len(result.clusters)} clusters of this slice; "
                    "no cluster is open.")
        return
    doc.heading(f"Cluster {number}")
    doc.table(tables.example_rows(result, number, slice_), "cluster-examples", caption="Three example steps")
    doc.table(tables.member_rows(result, number, slice_), "cluster-steps", caption="Its steps")
