"""The scoring engine: fit registry detectors on a slice's steps and write prediction sets.

For a slice, detectors, a feature set and seeds, per corpus of the slice:

1. step features are computed in DuckDB (``features.FeatureReader``) into a float32 matrix, a
   chunk of runs at a time: a corpus of one chunk is held whole; a larger one is read for its
   steps' keys first, then twice a chunk at a time (the fits' rows, then the scores), so the
   corpus's matrix is never held (``run_units``);
2. per seed, a room-disjoint split (``splits.group_split``) marks test runs;
3. per (detector, seed) a unit (``jobs``): a fit job on the rows the registry entry chooses
   for its supervision (``Detector.training_rows``), and score jobs over every step of the
   slice (train and test);
4. the jobs run through an executor (``executors.fit_units`` and ``score_units``: a Dask
   client from ``auditatlas.cluster``, or with ``client=None`` one after another in this
   process, the re-score page's path);
5. each (detector, seed) becomes one prediction set (``prediction_sets``) with its provenance
   (``provenance``: what ``params`` records).

All sets of one call are written as one new store source, ``rescore-<short id>``, via
``auditatlas.store.SourceWriter``: atomic, never replacing another source (every call gets a
fresh id). Cancelling (``should_stop``) or any failure writes nothing.

Provenance, per prediction set (``prediction_sets`` columns): ``method`` (registry name),
``family``, ``supervision``, ``granularity='step'``, ``seed``, ``feature_set``, ``slice``
(JSON of the slice with its corpus), ``source='rescore'``, ``source_file`` (the store source
name), ``created_at``; ``protocol`` and ``model`` stay null (they name judge protocols and
models); ``params`` is described in ``provenance``.

The default panel policy (every detector x 5 seeds) is ``panel.run_standard_panel``.
"""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UndefinedMetric
from ..progress import Progress, or_quiet
from ..view_state.state_fields import copy_shared
from . import DEFAULT_FEATURE_SET, registry
from .executors import Cancelled, ShouldStop, Tick, executor_name, fit_units, score_units
from .features import SCORE_CHUNK_RUNS, FeatureReader, StepFeatures, check_feature_set
from .jobs import PARTITION_ROWS, Unit, score_parts
from .prediction_sets import SetSummary, set_record, write_sets
from .provenance import data_sources, versions
from .request import check_request, detector_list, scorable_corpora, seed_list, slice_corpora
from .splits import TEST_SIZE, group_split
from .stale import stale_prediction_sets

# The engine's API beside score(): what the CLI and the re-score page import from here.
__all__ = ["Cancelled", "RescoreResult", "SetSummary", "check_request", "plan", "scorable_corpora", "score",
           "slice_corpora", "stale_prediction_sets"]

SOURCE_PREFIX = "rescore-"


@dataclass
class RescoreResult:
    """What one ``score`` call did: the source it wrote, its sets, notes and wall times."""

    source: str | None  # the store source written (None when nothing was)
    sets: list[SetSummary]
    notes: list[str]
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)  # wall seconds: features, jobs, write


def plan(features: StepFeatures, detectors: Sequence[registry.Detector], seeds: Sequence[int],
         partition_rows: int = PARTITION_ROWS, test_size: float = TEST_SIZE,
         bounds: list[int] | None = None) -> tuple[list[Unit], list[str]]:
    """The units of one corpus, and notes on (detector, seed) pairs that cannot be fitted.
    ``bounds``: the first rows of the chunks the features are read in (one chunk when None)."""
    units, notes = [], []
    n = len(features)
    for seed in seeds:
        split = group_split(features.runs, seed, test_size)
        if split.n_groups < 2:
            raise UndefinedMetric(f"corpus '{features.corpus}': the slice holds {split.n_groups} room or run, "
                                  "too few to hold any out for testing.")
        test_step = split.test_run[features.run_pos]
        info = split.info(test_step)
        for detector in detectors:
            training = detector.training_rows(~test_step, features.label, seed)
            if training.problem:
                notes.append(f"{detector.name}, seed {seed}, corpus '{features.corpus}': {training.problem}; skipped.")
                continue
            units.append(Unit(detector, int(seed), training, score_parts(detector, n, partition_rows, bounds),
                              test_run=split.test_run, test_step=test_step, split_info=info))
    return units, notes


def run_units(reader: FeatureReader, features: StepFeatures, units: list[Unit], client: Any = None,
              tick: Tick | None = None, should_stop: ShouldStop | None = None) -> str:
    """Fit and score ``units`` on the steps of ``reader``, ``features`` its steps' keys (with
    their matrix when the corpus is one chunk); returns where the jobs ran.

    A corpus of several chunks is never held as one matrix: the rows the fits choose (at most
    ``max_train`` a unit, or every training step of a detector without a cap) are gathered from
    a first read of the chunks, and each unit scores the next read a chunk at a time. A
    detector that reads no feature (the random floor) scores every step in one call on a
    matrix of no column."""
    reading = [unit for unit in units if unit.detector.reads_features]
    rowless = [unit for unit in units if not unit.detector.reads_features]
    n = len(features)
    if rowless:
        no_column = np.empty((n, 0), dtype=np.float32)
        fit_units(rowless, no_column, client, tick, should_stop)
        score_units(rowless, no_column, 0, n, client, tick, should_stop)
    if reading and reader.whole:
        fit_units(reading, features.X, client, tick, should_stop)
        score_units(reading, features.X, 0, n, client, tick, should_stop)
    elif reading:
        need = np.unique(np.concatenate([unit.training.rows for unit in reading]))
        fit_X = reader.gather(need)
        fit_units(reading, fit_X, client, tick, should_stop,
                  rows=[np.searchsorted(need, unit.training.rows) for unit in reading])
        del fit_X
        for i in range(len(reader.ranges)):
            chunk = reader.chunk(i)
            score_units(reading, chunk.X, reader.bounds[i], reader.bounds[i + 1], client, tick, should_stop)
            del chunk
    return executor_name(client)


def score(
    root: str | Path,
    detectors: Sequence[str],
    slice: Mapping[str, Any] | None = None,
    seeds: int | Sequence[int] = 1,
    feature_set: str = DEFAULT_FEATURE_SET,
    *,
    client: Any = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    partition_rows: int = PARTITION_ROWS,
    test_size: float = TEST_SIZE,
    chunk_runs: int = SCORE_CHUNK_RUNS,
) -> RescoreResult:
    """Fit and score ``detectors`` on the slice, seed by seed; write every set; return summaries.

    ``seeds``: a count (seeds 0..n-1) or the seeds themselves. ``client``: a Dask client (see
    ``auditatlas.cluster``), or None to run in this process. ``chunk_runs``: the runs whose
    features are held at once (a corpus with more is fitted on the rows gathered for the fits
    and scored a chunk at a time). Raises UndefinedMetric when no
    corpus of the slice holds both anomalous and normal labeled steps, Cancelled when
    ``should_stop`` turns true (nothing is then written).
    """
    began = time.perf_counter()
    root = Path(root)
    report = or_quiet(progress)
    chosen = detector_list(detectors)
    seed_values = seed_list(seeds)
    check_feature_set(feature_set)
    slice_ = copy_shared(slice, drop_empty=True)  # the label choice too: supervised detectors fit on it

    def stop_check() -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("re-score cancelled; nothing was written.")

    from queries import runner  # a writer of prediction sets reads the store through the query layer

    query = runner(root)
    report(0.0, "checking the slice's labels")
    corpora, notes = check_request(query, detectors, slice_, feature_set)

    short = uuid.uuid4().hex[:8]
    source = f"{SOURCE_PREFIX}{short}"
    created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    library_versions = versions()
    summaries: list[SetSummary] = []
    pending: list[tuple[dict, Any]] = []
    stages = dict.fromkeys(("features", "jobs", "assemble", "write"), 0.0)
    for corpus in corpora:
        c_index = corpora.index(corpus)
        share = 0.9 / len(corpora)
        base = c_index * share

        def sub(fraction: float, message: str, base=base, share=share, corpus=corpus) -> None:
            report(base + share * fraction, f"{corpus}: {message}")

        stop_check()
        t0 = time.perf_counter()
        reader = FeatureReader(query, corpus, slice_, feature_set, chunk_runs)
        features = (reader.every_step if reader.whole else reader.keys)(lambda f, m: sub(0.15 * f, m))
        stages["features"] += time.perf_counter() - t0
        units, unit_notes = plan(features, chosen, seed_values, partition_rows, test_size, reader.bounds)
        notes += unit_notes
        # The splits are drawn: the runs' ids are what the sets' tables need of the runs from
        # here on (their other columns are 140 MB at a million rooms, held through the jobs).
        features.runs = reader.runs = features.runs[["run_id"]]
        total = sum(u.jobs() for u in units)
        done = [0]

        def tick(message: str, done=done, total=total, sub=sub) -> None:
            done[0] += 1
            sub(0.15 + 0.8 * done[0] / max(total, 1), f"{message} ({done[0]}/{total} jobs)")
            stop_check()

        t0 = time.perf_counter()
        executor = run_units(reader, features, units, client, tick, should_stop)
        stages["jobs"] += time.perf_counter() - t0
        # The matrix is done with: the sets are assembled without it.
        features.X = np.empty((0, features.X.shape[1]), dtype=np.float32)
        t0 = time.perf_counter()
        sources = data_sources(root, corpus)
        slice_json = json.dumps({**slice_, "corpus": [corpus]}, sort_keys=True)
        for unit in units:
            # One corpus (the usual case): <source>-<detector>-s<seed>; several: the corpus too.
            where = f"{corpus}-" if len(corpora) > 1 else ""
            set_id = f"{source}-{where}{unit.detector.name}-s{unit.seed}"
            row, predictions, summary = set_record(unit, features, set_id, source, slice_json, executor,
                                                   created_at, sources, library_versions)
            pending.append((row, predictions))
            summaries.append(summary)
            unit.scored = []  # the arrays now live in the set's scores only
        # What the sets' tables are made of at the write: the steps' runs and indices, the
        # runs' ids (the steps' labels and actions are 110 MB at a million rooms).
        features.label = features.action = np.empty(0)
        stages["assemble"] += time.perf_counter() - t0
        del features

    stop_check()
    if not pending:
        return RescoreResult(None, [], notes + ["nothing could be fitted; nothing was written."],
                             time.perf_counter() - began, stages)
    report(0.92, f"writing {len(pending)} prediction set(s) to the store as source '{source}'")
    t0 = time.perf_counter()
    write_sets(root, source, pending, {"format": "rescore", "origin": "auditatlas score", "sets": len(pending),
                                       "feature_set": feature_set, "slice": slice_})
    stages["write"] = time.perf_counter() - t0
    report(1.0, f"wrote {len(pending)} prediction set(s)")
    return RescoreResult(source, summaries, notes, time.perf_counter() - began,
                         {k: round(v, 3) for k, v in stages.items()})
