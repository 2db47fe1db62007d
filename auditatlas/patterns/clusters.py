"""Failure clusters: the slice's anomalous steps grouped by MiniBatchKMeans (package docstring).

Which steps: the slice's labeled anomalies; when no step of the slice is labeled, the steps
most step-level prediction sets flag (the Review page's "flagged" order,
``analyses/review_queue.py``), so an unlabeled corpus gets clusters too.

The space: a step's L2-normalised text vector times sqrt(0.6), its action and agent one-hots
times sqrt(0.2) and sqrt(0.1), and its position times sqrt(0.05): the squared distance of two
steps is then about 2 - 2 x the neighbours' similarity (``similar.WEIGHTS``), so a cluster is
a group of steps that are "like each other" in the same sense as on the neighbours' list.

Deterministic for a seed: the same steps in the same order, ``random_state=seed`` and one
thread's arithmetic give the same partition. Clusters are numbered by size (1 = largest; ties
by their first step in the store's order), never by KMeans's own label numbers.
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..analyses import Query
from ..analyses.relabel import is_released
from ..analyses.review_queue import queue as review_queue
from ..errors import AtlasError
from ..progress import Progress, or_quiet, quiet
from ..view_state.state_fields import copy_shared
from . import DEFAULT_CLUSTERS
from . import text as text_mod
from .similar import WEIGHTS, step_scores
from .vectors import StepVectors

TOP_TERMS = 6
EXAMPLES = 3
TERM_SAMPLE = 100  # a cluster's steps nearest its centre whose text names its top terms
CACHE = "clusters"  # under the vectors' build folder: one file per slice, seed and count



@dataclass
class Cluster:
    number: int
    size: int
    top_terms: list[str]
    backbones: list[tuple[str, float]]  # (backbone, share of the cluster's steps), largest first
    actions: list[tuple[str, float]]
    examples: pd.DataFrame  # run_id, step_idx, backbone, action, label, text_out


@dataclass
class FailureClusters:
    source: str  # "labeled anomalies" or "flagged steps"
    seed: int
    clusters: list[Cluster]
    members: pd.DataFrame  # cluster, run_id, step_idx, corpus, backbone, action, agent, label
    scores: pd.DataFrame = field(default_factory=pd.DataFrame)  # the examples' set scores

    def steps_of(self, number: int) -> pd.DataFrame:
        return self.members[self.members["cluster"] == number].reset_index(drop=True)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "seed": self.seed, "steps": int(len(self.members)), "clusters": [
            {"cluster": c.number, "size": c.size, "top_terms": c.top_terms,
             "backbones": [{"backbone": b, "share": round(s, 4)} for b, s in c.backbones],
             "actions": [{"action": a, "share": round(s, 4)} for a, s in c.actions],
             "examples": [{"run_id": e["run_id"], "step_idx": int(e["step_idx"]), "backbone": e["backbone"],
                           "action": e["action"], "label": None if pd.isna(e["label"]) else int(e["label"])}
                          for e in c.examples.to_dict("records")],
             "steps": [{"run_id": r, "step_idx": int(s)} for r, s in
                       self.steps_of(c.number)[["run_id", "step_idx"]].itertuples(index=False)]}
            for c in self.clusters]}


def anomalous_rows(vectors: StepVectors, query: Query, slice_: Mapping[str, Any] | None) -> tuple[np.ndarray, str]:
    """The rows to cluster and what they are; one sentence when the slice has none."""
    mask = vectors.slice_mask(slice_)
    if not mask.any():
        raise AtlasError("This slice holds no steps; widen the filters in the sidebar.")
    if is_released(slice_):
        label = np.asarray(vectors.step["label"])
        labeled = bool((label[mask] >= 0).any())
        rows = np.flatnonzero(mask & (label == 1))
    else:  # the vectors hold the released labels: the chosen ones are read from the store
        labeled = int(query("slice_summary", {"slice": dict(slice_ or {})})["labeled_steps"].sum()) > 0
        found = query("slice_anomalies", {"slice": dict(slice_ or {})})
        rows = np.sort(vectors.rows_of(zip(found["run_id"], found["step_idx"])))
    if labeled:
        if not len(rows):
            raise AtlasError("This slice has no labeled anomalies to cluster.")
        return rows, "labeled anomalies"
    flagged = review_queue(query, "flagged", slice_)
    rows = np.sort(vectors.rows_of(zip(flagged["run_id"], flagged["step_idx"])))
    if not len(rows):
        raise AtlasError("This slice has no labels, and no step of it is flagged by most prediction sets: "
                         "nothing to cluster.")
    return rows, "flagged steps"


def failure_clusters(vectors: StepVectors, query: Query, slice_: Mapping[str, Any] | None = None, seed: int = 0,
                     n_clusters: int = DEFAULT_CLUSTERS, progress: Progress | None = None) -> FailureClusters:
    """The clusters of the slice's anomalous steps (cached per store version, slice, seed, count)."""
    report = or_quiet(progress)
    if n_clusters < 2:
        raise AtlasError(f"Ask for at least 2 clusters, not {n_clusters}.")
    rows, source = anomalous_rows(vectors, query, slice_)
    if len(rows) < n_clusters:
        raise AtlasError(f"This slice has {len(rows):,} {source}, fewer than the {n_clusters} clusters asked for; "
                         "widen the slice or ask for fewer clusters.")
    report(0.1, f"clustering {len(rows):,} {source}")
    assign, distance = _cached_fit(vectors, rows, slice_, seed, n_clusters, report)
    report(0.8, "naming the clusters")
    members = vectors.keys(rows)
    if not is_released(slice_):  # the vectors' labels are the released ones
        members["label"] = 1.0 if source == "labeled anomalies" else np.nan
    members.insert(0, "cluster", assign)
    members["distance"] = distance
    # KMeans leaves a cluster empty when the steps have fewer distinct places than clusters
    # (templated text): the empty ones, numbered last by size, are left out.
    clusters = [_describe(vectors, query, members, rows, number) for number in range(1, n_clusters + 1)
                if (assign == number).any()]
    examples = pd.concat([c.examples for c in clusters], ignore_index=True)
    report(1.0, "clusters ready")
    return FailureClusters(source, seed, clusters, members.drop(columns="distance"), step_scores(query, examples))


def _cached_fit(vectors: StepVectors, rows: np.ndarray, slice_, seed: int, n_clusters: int,
                report: Progress) -> tuple[np.ndarray, np.ndarray]:
    """Cluster numbers (1 = largest) and distances to the centre, from the cache when there."""
    key = json.dumps({"slice": {k: v if isinstance(v, str) else sorted(map(str, v)) for k, v in copy_shared(slice_, True).items()}, "seed": seed,
                      "n": n_clusters}, sort_keys=True)
    folder = vectors.folder / CACHE
    path = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"
    if path.is_file():
        cached = np.load(path)
        if np.array_equal(cached["rows"], rows):
            return cached["assign"], cached["distance"]
    if len(rows) <= FIT_ROWS:
        assign, distance = fit(space(vectors, rows), seed, n_clusters, rows)
    else:
        assign, distance = fit_sample(vectors, rows, seed, n_clusters)
    report(0.7, "clusters found")
    folder.mkdir(exist_ok=True)
    scratch = folder / f".tmp-{uuid.uuid4().hex}.npz"
    np.savez(scratch, rows=rows, assign=assign, distance=distance)
    os.replace(scratch, path)  # atomic: a reader finds the whole file or none
    return assign, distance


def space(vectors: StepVectors, rows: np.ndarray, used: np.ndarray | None = None) -> sp.csr_matrix:
    """The clustered steps in the space of the module docstring (text columns compacted to the
    words the rows use, or to ``used``: a word outside it is left out, see ``assign_chunks``)."""
    text = vectors.text_rows(rows)
    if used is None:
        used, compact = np.unique(text.indices, return_inverse=True)
        text = sp.csr_matrix((text.data * np.sqrt(WEIGHTS["text"]), compact.ravel(), text.indptr),
                             shape=(len(rows), len(used)))
    else:
        text = sp.csr_matrix((text.data * np.sqrt(WEIGHTS["text"]), text.indices, text.indptr),
                             shape=(len(rows), text.shape[1]))[:, used]
    blocks = [text]
    for name, vocab in (("action", vectors.actions), ("agent", vectors.agents)):
        codes = np.asarray(vectors.step[name][rows]).astype(np.int64)
        have = codes >= 0
        blocks.append(sp.csr_matrix((np.full(have.sum(), np.sqrt(WEIGHTS[name]), np.float32),
                                     (np.flatnonzero(have), codes[have])), shape=(len(rows), max(len(vocab), 1))))
    position = np.asarray(vectors.step["position"][rows]).astype(np.float32) * np.sqrt(WEIGHTS["position"])
    blocks.append(sp.csr_matrix(position.reshape(-1, 1)))
    return sp.hstack(blocks, format="csr", dtype=np.float64)


def fit(matrix: sp.csr_matrix, seed: int, n_clusters: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MiniBatchKMeans on ``matrix``; clusters renumbered 1.. by size (ties: first row)."""
    model = _kmeans(seed, n_clusters)
    labels = model.fit_predict(matrix)
    distance = model.transform(matrix)[np.arange(len(labels)), labels]
    return _numbered(labels, n_clusters, rows), distance.astype(np.float64)


# Above this many steps the clusters are fitted on a seeded sample of them and every step is then
# assigned to its nearest centre a chunk at a time: the whole store's 1.8 million anomalies at a
# million rooms took 5.6 GB as one matrix. At or below it the fit reads every step, as before.
FIT_ROWS = 200_000
ASSIGN_ROWS = 100_000  # steps assigned at once


def fit_sample(vectors: StepVectors, rows: np.ndarray, seed: int, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """MiniBatchKMeans fitted (as ``fit``) on ``FIT_ROWS`` of ``rows`` drawn by ``seed``; every
    row then assigned to its nearest centre, ``ASSIGN_ROWS`` at a time. Numbered as ``fit``
    numbers (1 = largest over every row). A word no sampled step uses has a zero centre
    coordinate: it does not change which centre is nearest, and its weight is added back to
    the distance, so distances are those of the whole space."""
    from ..detectors.registry import seeded_subsample

    sample = rows[seeded_subsample(np.arange(len(rows)), FIT_ROWS, seed)]
    # The sample's chunks span as much of the store as the assignment's (a sparse sample spans more).
    size = max(1, ASSIGN_ROWS * len(sample) // len(rows))
    used = np.unique(sp.vstack([vectors.text_rows(chunk) for chunk in _chunks(vectors, sample, size)],
                               format="csr").indices)
    model = _kmeans(seed, n_clusters).fit(sp.vstack([space(vectors, chunk, used) for chunk in
                                                     _chunks(vectors, sample, size)], format="csr"))
    labels = np.empty(len(rows), dtype=np.int64)
    distance = np.empty(len(rows), dtype=np.float64)
    for lo in range(0, len(rows), ASSIGN_ROWS):
        chunk = rows[lo:lo + ASSIGN_ROWS]
        text = vectors.text_rows(chunk)
        outside = ~np.isin(text.indices, used)
        left_out = np.bincount(np.repeat(np.arange(len(chunk)), np.diff(text.indptr))[outside],
                               weights=(text.data[outside].astype(np.float64) ** 2) * WEIGHTS["text"],
                               minlength=len(chunk))
        matrix = space(vectors, chunk, used)
        labels[lo:lo + len(chunk)] = model.predict(matrix)
        near = model.transform(matrix)[np.arange(len(chunk)), labels[lo:lo + len(chunk)]]
        distance[lo:lo + len(chunk)] = np.sqrt(near.astype(np.float64) ** 2 + left_out)
        vectors.release()
    return _numbered(labels, n_clusters, rows), distance


def _chunks(vectors: StepVectors, rows: np.ndarray, size: int):
    """``rows`` (in store order) ``size`` at a time, the vectors' pages let go after each chunk:
    a sample spread over the whole store otherwise touched most of its files' pages at once."""
    for lo in range(0, len(rows), size):
        yield rows[lo:lo + size]
        vectors.release()


def _kmeans(seed: int, n_clusters: int):
    from sklearn.cluster import MiniBatchKMeans

    return MiniBatchKMeans(n_clusters=n_clusters, random_state=seed, n_init=3, batch_size=4096,
                           max_iter=100, reassignment_ratio=0.01)


def _numbered(labels: np.ndarray, n_clusters: int, rows: np.ndarray) -> np.ndarray:
    """KMeans's labels as cluster numbers, 1 = largest (ties: the cluster with the first row)."""
    sizes = np.bincount(labels, minlength=n_clusters)
    first = np.full(n_clusters, np.iinfo(np.int64).max)
    np.minimum.at(first, labels, rows)
    order = np.lexsort((first, -sizes))
    number = np.empty(n_clusters, dtype=np.int64)
    number[order] = np.arange(1, n_clusters + 1)
    return number[labels]


def _describe(vectors: StepVectors, query: Query, members: pd.DataFrame, rows: np.ndarray, number: int) -> Cluster:
    inside = members["cluster"].to_numpy() == number
    steps = members[inside].sort_values(["distance", "run_id", "step_idx"])
    nearest = steps.head(TERM_SAMPLE)
    texts = query("pattern_step_texts", {"runs": nearest["run_id"].astype(str).tolist(),
                                         "steps": nearest["step_idx"].astype(int).tolist(),
                                         "run_ids": sorted(set(nearest["run_id"].astype(str)))})
    examples = nearest.head(EXAMPLES)[["run_id", "step_idx", "backbone", "action", "label"]].merge(
        texts[["run_id", "step_idx", "text_out"]], on=["run_id", "step_idx"], how="left")
    return Cluster(number, int(inside.sum()), _top_terms(vectors, rows[inside], texts),
                   _shares(steps["backbone"]), _shares(steps["action"]), examples.reset_index(drop=True))


def _top_terms(vectors: StepVectors, rows: np.ndarray, texts: pd.DataFrame) -> list[str]:
    """The heaviest words of the cluster's mean text vector, named from its nearest steps' text."""
    mean = np.asarray(vectors.text_rows(rows).mean(axis=0)).ravel()
    vectors.release()  # a large cluster's rows touch most of the build's pages: not kept resident
    names = text_mod.words_of((texts["text_in"] + "\n" + texts["text_out"]).tolist())
    heaviest = [int(c) for c in np.argsort(-mean, kind="stable")[: 10 * TOP_TERMS] if mean[c] > 0]
    return [names[c] for c in heaviest if c in names][:TOP_TERMS]


def _shares(values: pd.Series) -> list[tuple[str, float]]:
    counts = values.fillna("(none)").astype(str).value_counts()
    total = max(int(counts.sum()), 1)
    return sorted(((str(k), int(v) / total) for k, v in counts.items()), key=lambda item: (-item[1], item[0]))


def keep_default(root, query: Query) -> None:
    """What a write prepares for the first /patterns of its version: the step vectors (built
    when missing) and the whole store's failure clusters' fit at seed 0 and the default count
    (kept on disk by ``_cached_fit``). A store with nothing to cluster is left to the page to explain."""
    from . import vectors

    found = vectors.load(root, query)
    try:
        rows, _ = anomalous_rows(found, query, {})
        if len(rows) >= DEFAULT_CLUSTERS:
            # The fit alone (minutes at a million rooms) is kept; naming the clusters takes the page
            # seconds, and holding every member's keys here doubled the write's peak there.
            _cached_fit(found, rows, {}, 0, DEFAULT_CLUSTERS, quiet)
    except AtlasError:
        pass
