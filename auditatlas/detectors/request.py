"""A scoring request checked before any work: its detectors, its seeds, and the corpora of its
slice that can be scored. Shared by the engine, the cross-backbone matrix and the CLI, so a bad
request gets the same sentence from each."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import AtlasError, UndefinedMetric
from ..query_function import Query
from . import DEFAULT_FEATURE_SET, registry
from .features import check_feature_set


def detector_list(names: Sequence[str]) -> list[registry.Detector]:
    """The registry entries named (each once, in order); AtlasError for none or a board-only one."""
    if not names:
        raise AtlasError("choose at least one detector.")
    out = []
    for name in dict.fromkeys(names):
        detector = registry.get(name)
        if not detector.engine:
            raise AtlasError(f"detector '{name}' is a board-only entrant; choose from: "
                             f"{', '.join(registry.engine_detectors())}.")
        out.append(detector)
    return out


def seed_list(seeds: int | Sequence[int]) -> list[int]:
    """A count (seeds 0..n-1) or the seeds themselves, as a list; AtlasError when empty."""
    if isinstance(seeds, (int, np.integer)):
        if seeds < 1:
            raise AtlasError("seeds must be at least 1.")
        return list(range(int(seeds)))
    out = [int(s) for s in seeds]
    if not out:
        raise AtlasError("give at least one seed.")
    return out


def slice_corpora(query: Query, slice: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per corpus of the slice: runs, steps, anomalous / normal / unlabeled step counts."""
    return query("step_label_counts", {"slice": dict(slice or {})}).to_dict(orient="records")


def scorable_corpora(counts: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """Corpora that hold anomalous and normal labeled steps, and one sentence per other corpus."""
    ok, notes = [], []
    for row in counts:
        pos, neg = int(row["positives"] or 0), int(row["negatives"] or 0)
        if pos and neg:
            ok.append(str(row["corpus"]))
        else:
            missing = "no anomalous step" if not pos else "no normal step"
            notes.append(f"corpus '{row['corpus']}': the slice holds {int(row['steps'] or 0):,} steps with "
                         f"{missing} among its {pos + neg:,} labeled ones, so no detector can be evaluated there.")
    return ok, notes


def check_request(query: Query, detectors: Sequence[str], slice: Mapping[str, Any] | None,
                  feature_set: str = DEFAULT_FEATURE_SET) -> tuple[list[str], list[str]]:
    """Raise AtlasError (UndefinedMetric) for a request that cannot run; else return the
    scorable corpora and one sentence per corpus of the slice that is not."""
    detector_list(detectors)
    check_feature_set(feature_set)
    counts = slice_corpora(query, {k: v for k, v in dict(slice or {}).items() if v})
    if not counts:
        raise UndefinedMetric(f"no run of the store matches the slice {json.dumps(dict(slice or {}), sort_keys=True)}.")
    corpora, notes = scorable_corpora(counts)
    if not corpora:
        raise UndefinedMetric(" ".join(notes))
    return corpora, notes
