"""The scoring engine: fit registry detectors on a slice's steps and write prediction sets.

For a slice, detectors, a feature set and seeds, per corpus of the slice:

1. step features are computed in DuckDB (``features.step_features``) into one float32 matrix;
2. per seed, a room-disjoint split (``splits.group_split``) marks test runs;
3. per (detector, seed) a *fit job* fits the detector on the rows its supervision allows
   (unsupervised: every training step; one-class: the normal training steps; supervised: the
   labeled training steps with their labels; never a null label), on a seeded subsample of at
   most ``max_train`` rows where the registry caps it; columns constant on those rows are
   dropped and, for distance/kernel detectors, the rest standardized on them;
4. *score jobs* score every step of the slice (train and test), ``partition_rows`` steps
   each, so a large slice spreads over the workers;
5. each (detector, seed) becomes one prediction set: one row per step (``split`` = the run's
   side of the split) plus one run-level row per run (score = max of its steps' scores,
   pred_label = max of theirs: a run is as suspicious as its most suspicious step).

Jobs run through a Dask client (``auditatlas.cluster.get_client``: a local cluster of
processes, or an existing cluster) or, with ``client=None``, one after another in this
process (the re-score page's path). The feature matrix is scattered to the workers once;
jobs receive it plus row indices, never the store.

All sets of one call are written as one new store source, ``rescore-<short id>``, via
``auditatlas.store.SourceWriter``: atomic, never replacing another source (every call gets a
fresh id). Cancelling (``should_stop``) or any failure writes nothing.

Provenance, per prediction set (``prediction_sets`` columns): ``method`` (registry name),
``family``, ``supervision``, ``granularity='step'``, ``seed``, ``feature_set``, ``slice``
(JSON of the slice with its corpus), ``source='rescore'``, ``source_file`` (the store source
name), ``created_at``; ``protocol`` and ``model`` stay null (they name judge protocols and
models). ``params`` (JSON) holds, at top level:

- ``detector``, ``title``, ``estimator`` (class path), ``estimator_params`` (``get_params``,
  JSON-safe), ``preprocessing`` (what was done before fitting), ``feature_columns`` (names),
  ``dropped_columns`` (constant on the fitted rows);
- ``fit_rows`` (which rows the fit used), ``max_train`` (the cap, or null), ``n_fit`` (rows
  actually fitted on), ``contamination`` (PyOD threshold share, where there is one),
  ``pred_label`` (how the decision was made), ``run_score`` (how run rows are made);
- ``split``: kind, groups, test_size, seed, n_groups, n_train_runs, n_test_runs,
  n_train_steps, n_test_steps;
- ``fit_seconds`` (wall time of the fit job), ``score_seconds`` (wall time of the score jobs,
  summed over partitions), ``fit_cpu_seconds`` / ``score_cpu_seconds`` (CPU time of the job's
  thread: the same figures without the neighbours' load on a shared machine), ``partitions``;
- ``peak_memory_mb``: the most the job's process grew above its size at job start, over the
  fit and score jobs (sampled every 10 ms with psutil, so native allocations count);
  ``peak_rss_mb``: the highest resident size of that process (it includes the scattered
  feature matrix and the worker itself);
- ``executor`` (``in-process`` or ``dask <scheduler> (...)``), ``versions`` (scikit-learn,
  PyOD, numpy), ``data_sources`` (store source -> folder the corpus's runs were read from:
  what ``stale_prediction_sets`` checks), ``test_metrics`` (ROC-AUC, F1, accuracy, balanced
  accuracy on the labeled test steps; null with a note where undefined).
"""
from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import AtlasError, UndefinedMetric
from . import registry
from .features import DEFAULT_FEATURE_SET, StepFeatures, check_feature_set, step_features
from .splits import TEST_SIZE, group_split
from .stale import stale_prediction_sets  # noqa: F401 - part of the engine's API

PARTITION_ROWS = 250_000  # steps per score job
STANDARD_PANEL_SEEDS = 5
STANDARD_PANEL_CORPUS = "maadbench-sim"
SOURCE_PREFIX = "rescore-"

Progress = Callable[[float, str], None]
ShouldStop = Callable[[], bool]


class Cancelled(AtlasError):
    """The re-score was cancelled; nothing was written."""


# =============================================================================================
# Jobs (module-level functions: Dask pickles them by reference)


class _Meter:
    """Wall time and memory of one job: RSS sampled every 10 ms in a side thread.

    The job also runs with one BLAS/OpenMP thread (threadpoolctl): the parallelism is across
    jobs, and histogram gradient boosting's OpenMP threads, left free, spin against the other
    worker (5x slower on two busy cores).
    """

    def __enter__(self) -> "_Meter":
        import psutil
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=1)

        self._proc = psutil.Process()
        self.start_rss = self.peak_rss = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self._t0 = time.perf_counter()
        self._c0 = time.thread_time()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak_rss = max(self.peak_rss, self._proc.memory_info().rss)

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._t0
        # CPU of this thread only: on a shared machine wall time measures the neighbours too.
        self.cpu_seconds = time.thread_time() - self._c0
        self._stop.set()
        self._thread.join()
        self.peak_rss = max(self.peak_rss, self._proc.memory_info().rss)
        self._limits.restore_original_limits()

    @property
    def grew_mb(self) -> float:
        return (self.peak_rss - self.start_rss) / 2**20

    @property
    def rss_mb(self) -> float:
        return self.peak_rss / 2**20


@dataclass
class Fitted:
    """A fitted detector and what the score jobs and provenance need from its fit."""

    model: Any
    keep: np.ndarray  # column indices the model reads
    seconds: float
    cpu_seconds: float
    grew_mb: float
    rss_mb: float
    n_fit: int


def fit_job(name: str, seed: int, X: np.ndarray, rows: np.ndarray, y: np.ndarray | None) -> Fitted:
    """Fit registry detector ``name`` on rows ``rows`` of X (labels ``y`` when supervised)."""
    import warnings

    detector = registry.get(name)
    with _Meter() as meter:
        fit_X = X[rows]
        if detector.reads_features:
            keep = np.flatnonzero(np.ptp(fit_X, axis=0) > 0) if len(fit_X) else np.zeros(0, dtype=np.int64)
            if keep.size == 0:
                raise UndefinedMetric(f"{name}: no feature varies on the {len(rows):,} rows it would be fitted on.")
            fit_X = fit_X[:, keep]
        else:
            keep = np.arange(X.shape[1])
        model = detector.make(seed)
        if detector.scale:
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            model = make_pipeline(StandardScaler(), model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; provenance records the params
            model.fit(fit_X, y) if y is not None else model.fit(fit_X)
        del fit_X
    return Fitted(model, keep, meter.seconds, meter.cpu_seconds, meter.grew_mb, meter.rss_mb, len(rows))


@dataclass
class Scored:
    lo: int
    scores: np.ndarray
    labels: np.ndarray
    seconds: float
    cpu_seconds: float
    grew_mb: float
    rss_mb: float


def decisions(model: Any, X: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The estimator's own 0/1 decision, without scoring twice.

    PyOD's ``predict`` is ``decision_function > threshold_`` (the contamination quantile of
    its training scores), and a binary probabilistic classifier's ``predict`` is P(1) > 0.5,
    so both follow from the scores already computed; anything else is asked.
    """
    last = model.steps[-1][1] if hasattr(model, "steps") else model
    threshold = getattr(last, "threshold_", None)
    if threshold is not None:
        return (scores > threshold).astype(np.int8)
    if isinstance(last, registry.ProbabilityDetector):
        return (scores > 0.5).astype(np.int8)
    return np.asarray(model.predict(X), dtype=np.int8)


def score_job(fitted: Fitted, X: np.ndarray, lo: int, hi: int, rows: np.ndarray | None = None) -> Scored:
    """Scores and decisions of rows [lo, hi) of X (of X[rows] when ``rows`` is given)."""
    with _Meter() as meter:
        part = (X[lo:hi] if rows is None else X[rows[lo:hi]])[:, fitted.keep]
        scores = np.asarray(fitted.model.decision_function(part), dtype=np.float64)
        labels = decisions(fitted.model, part, scores)
        del part
    return Scored(lo, scores, labels, meter.seconds, meter.cpu_seconds, meter.grew_mb, meter.rss_mb)


# =============================================================================================
# Planning


@dataclass
class Unit:
    """One (detector, seed) fit and the score jobs that use it.

    For a re-score it is one prediction set (every step scored, ``parts`` ranges over all
    steps); for the cross-backbone matrix ``score_rows`` names the steps to score (the test
    steps) and ``parts`` ranges over that list. ``tag`` is the caller's bookkeeping.
    """

    detector: registry.Detector
    seed: int
    rows: np.ndarray
    y: np.ndarray | None
    fit_rows: str
    parts: list[tuple[int, int]]
    score_rows: np.ndarray | None = None
    test_run: np.ndarray | None = None  # bool per run of features.runs
    test_step: np.ndarray | None = None  # bool per step
    split_info: dict[str, Any] = field(default_factory=dict)
    tag: Any = None
    fitted: Fitted | None = None
    scored: list[Scored] = field(default_factory=list)

    def scores(self) -> tuple[np.ndarray, np.ndarray]:
        """Scores and decisions of the scored rows, in row order."""
        parts = sorted(self.scored, key=lambda s: s.lo)
        return np.concatenate([p.scores for p in parts]), np.concatenate([p.labels for p in parts])


def _fit_rows(detector: registry.Detector, train: np.ndarray, label: np.ndarray,
              seed: int) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Rows (and labels) a detector is fitted on, by its supervision; a seeded subsample
    where the registry caps the training size."""
    if detector.supervision == "supervised":
        rows = np.flatnonzero(train & ~np.isnan(label))
        what = "labeled training steps"
    elif detector.supervision == "one-class":
        rows = np.flatnonzero(train & (label == 0))
        what = "normal training steps"
    else:
        rows = np.flatnonzero(train)
        what = "training steps (labels unused)"
    if detector.max_train is not None and len(rows) > detector.max_train:
        pick = np.random.RandomState(seed).choice(len(rows), detector.max_train, replace=False)
        rows = np.sort(rows[pick])
        what += f", seeded subsample of {detector.max_train:,}"
    y = label[rows].astype(np.int64) if detector.supervision == "supervised" else None
    return rows.astype(np.int64), y, what


def _unit_problem(detector: registry.Detector, rows: np.ndarray, y: np.ndarray | None) -> str | None:
    if detector.supervision == "supervised":
        if y is None or len(np.unique(y)) < 2:
            have = "no anomalous" if y is None or not (y == 1).any() else "no normal"
            return f"the training split holds {have} labeled step, so a supervised detector cannot be fitted"
    elif len(rows) < 2:
        return f"the training split holds {len(rows)} usable step(s)"
    return None


def _partitions(n: int, partition_rows: int) -> list[tuple[int, int]]:
    size = max(1, int(partition_rows))
    return [(lo, min(n, lo + size)) for lo in range(0, max(n, 1), size)] if n else []


def plan(features: StepFeatures, detectors: Sequence[registry.Detector], seeds: Sequence[int],
         partition_rows: int = PARTITION_ROWS, test_size: float = TEST_SIZE) -> tuple[list[Unit], list[str]]:
    """The units of one corpus, and notes on (detector, seed) pairs that cannot be fitted."""
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
            rows, y, what = _fit_rows(detector, ~test_step, features.label, seed)
            problem = _unit_problem(detector, rows, y)
            if problem:
                notes.append(f"{detector.name}, seed {seed}, corpus '{features.corpus}': {problem}; skipped.")
                continue
            parts = [(0, n)] if not detector.reads_features else _partitions(n, partition_rows)
            units.append(Unit(detector, int(seed), rows, y, what, parts, test_run=split.test_run, test_step=test_step,
                              split_info=info))
    return units, notes


# =============================================================================================
# Execution


def execute(units: list[Unit], X: np.ndarray, client: Any = None, tick: Callable[[str], None] | None = None,
            should_stop: ShouldStop | None = None) -> str:
    """Run every unit's fit and score jobs (on ``client``, else here); returns where they ran."""
    tick = tick or (lambda message: None)
    if client is None:
        return _run_inline(units, X, tick)
    return _run_dask(client, units, X, tick, should_stop)


def _run_inline(units: list[Unit], X: np.ndarray, tick: Callable[[str], None]) -> str:
    for unit in units:
        unit.fitted = fit_job(unit.detector.name, unit.seed, X, unit.rows, unit.y)
        tick(f"fitted {unit.detector.name} (seed {unit.seed})")
        for lo, hi in unit.parts:
            unit.scored.append(score_job(unit.fitted, X, lo, hi, unit.score_rows))
            tick(f"scored {unit.detector.name} (seed {unit.seed}) steps {lo:,}-{hi:,}")
    return "in-process"


def _run_dask(client, units: list[Unit], X: np.ndarray, tick: Callable[[str], None],
              should_stop: ShouldStop | None) -> str:
    from distributed import as_completed

    from ..cluster import describe

    where = describe(client)
    X_remote = client.scatter(X, broadcast=True)
    # The scheduler places fits freely (it balances them and steals work). The partitions of
    # one detector's scoring are dealt round-robin to the workers (a hint, not a pin): left
    # alone, it runs every one where the fitted model is, so they would queue on one worker
    # while the other idles (X is on every worker; the model is small to move).
    workers = sorted(client.scheduler_info().get("workers", {}))

    def hint(i: int, n_parts: int) -> dict[str, Any]:
        if n_parts < 2 or len(workers) < 2:
            return {}
        return {"workers": [workers[i % len(workers)]], "allow_other_workers": True}

    owner: dict[str, tuple[Unit, str]] = {}
    futures = []
    for unit in units:
        fit = client.submit(fit_job, unit.detector.name, unit.seed, X_remote, unit.rows, unit.y, pure=False)
        owner[fit.key] = (unit, "fit")
        futures.append(fit)
        for i, (lo, hi) in enumerate(unit.parts):
            part = client.submit(score_job, fit, X_remote, lo, hi, unit.score_rows, pure=False,
                                 **hint(i, len(unit.parts)))
            owner[part.key] = (unit, "score")
            futures.append(part)
    try:
        for future in as_completed(futures):
            if should_stop is not None and should_stop():
                raise Cancelled("re-score cancelled; nothing was written.")
            result = future.result()  # re-raises a job's exception here
            unit, kind = owner[future.key]
            if kind == "fit":
                unit.fitted = result
                tick(f"fitted {unit.detector.name} (seed {unit.seed})")
            else:
                unit.scored.append(result)
                tick(f"scored {unit.detector.name} (seed {unit.seed}) steps {result.lo:,}-{result.lo + len(result.scores):,}")
    finally:
        client.cancel(futures + [X_remote])
    return where


# =============================================================================================
# Assembling and writing prediction sets


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return _json_safe(float(value))
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if hasattr(value, "get_params"):
        return type(value).__name__
    return repr(value)


def estimator_params(model: Any) -> dict[str, Any]:
    """``get_params(deep=True)`` as JSON: nested estimators by class name, leaves as values."""
    return {k: _json_safe(v) for k, v in sorted(model.get_params(deep=True).items())}


def _versions() -> dict[str, str]:
    import pyod
    import sklearn

    return {"scikit-learn": sklearn.__version__, "pyod": pyod.__version__, "numpy": np.__version__}


def _run_max(values: np.ndarray, run_pos: np.ndarray, n_runs: int) -> np.ndarray:
    out = np.full(n_runs, -np.inf)
    np.maximum.at(out, run_pos, values)
    return out


def _prediction_rows(set_id: str, features: StepFeatures, scores: np.ndarray, labels: np.ndarray,
                     test_step: np.ndarray, test_run: np.ndarray):
    """The set's predictions as an Arrow table: step rows, then one run row per scored run."""
    import pyarrow as pa

    n_runs = len(features.runs)
    run_ids = pa.array(features.runs["run_id"].astype(str).tolist(), type=pa.string())
    has_steps = np.zeros(n_runs, dtype=bool)
    has_steps[features.run_pos] = True
    runs_scored = np.flatnonzero(has_steps)
    run_score = _run_max(scores, features.run_pos, n_runs)[runs_scored]
    run_label = _run_max(labels.astype(np.float64), features.run_pos, n_runs)[runs_scored]
    sides = pa.array(["train", "test"], type=pa.string())

    def take(idx: np.ndarray):
        return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), run_ids).cast(pa.string())

    def side(mask: np.ndarray):
        return pa.DictionaryArray.from_arrays(pa.array(mask.astype(np.int32)), sides).cast(pa.string())

    def constant(value: str, n: int):
        # A million-row column of one string, without a million Python objects.
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value])).cast(pa.string())

    n_steps = len(features)
    step_rows = pa.table({
        "set_id": constant(set_id, n_steps),
        "corpus": constant(features.corpus, n_steps),
        "run_id": take(features.run_pos),
        "step_idx": pa.array(features.step_idx, type=pa.int64()),
        "score": pa.array(scores, type=pa.float64()),
        "pred_label": pa.array(labels.astype(np.int8), type=pa.int8()),
        "split": side(test_step),
    })
    run_rows = pa.table({
        "set_id": constant(set_id, len(runs_scored)),
        "corpus": constant(features.corpus, len(runs_scored)),
        "run_id": take(runs_scored),
        "step_idx": pa.nulls(len(runs_scored), pa.int64()),
        "score": pa.array(run_score, type=pa.float64()),
        "pred_label": pa.array(run_label.astype(np.int8), type=pa.int8()),
        "split": side(test_run[runs_scored]),
    })
    return pa.concat_tables([step_rows, run_rows])


@dataclass
class SetSummary:
    """One written prediction set, as the CLI and the page report it."""

    set_id: str
    corpus: str
    detector: str
    family: str
    supervision: str
    seed: int
    feature_set: str
    n_steps: int
    n_test_steps: int
    test_pos: int
    test_neg: int
    test_roc_auc: float | None
    fit_seconds: float
    score_seconds: float
    peak_memory_mb: float
    note: str = ""
    fit_cpu_seconds: float = 0.0
    score_cpu_seconds: float = 0.0

    def line(self) -> str:
        auc = f"{self.test_roc_auc:.3f}" if self.test_roc_auc is not None else f"undefined ({self.note})"
        return (f"{self.set_id}: {self.detector} ({self.supervision}, {self.family}) seed {self.seed} on "
                f"{self.corpus} [{self.feature_set}]: test ROC-AUC {auc} over {self.test_pos + self.test_neg:,} "
                f"labeled test steps ({self.test_pos:,} anomalous); {self.n_steps:,} steps scored; fit "
                f"{self.fit_seconds:.2f} s, score {self.score_seconds:.2f} s, peak +{self.peak_memory_mb:.0f} MB")


def _set_record(unit: Unit, features: StepFeatures, set_id: str, source: str, slice_json: str,
                executor: str, created_at: str, data_sources: dict[str, str],
                versions: dict[str, str]) -> tuple[dict[str, Any], Any, SetSummary]:
    from .metrics import summarize

    fitted = unit.fitted
    assert fitted is not None and unit.scored, "a unit is written only after all its jobs ran"
    parts = unit.scored
    scores, labels = unit.scores()
    score_seconds = float(sum(p.seconds for p in parts))
    grew = max([fitted.grew_mb] + [p.grew_mb for p in parts])
    rss = max([fitted.rss_mb] + [p.rss_mb for p in parts])

    test = unit.test_step & features.labeled
    summary = summarize(features.label[test].astype(np.int64), scores[test], labels[test])
    detector = unit.detector
    kept = set(fitted.keep.tolist())
    last = fitted.model.steps[-1][1] if hasattr(fitted.model, "steps") else fitted.model
    params = {
        "detector": detector.name,
        "title": detector.title,
        "estimator": detector.estimator_class,
        "estimator_params": estimator_params(fitted.model),
        "preprocessing": (["drop columns constant on the fitted rows"] if detector.reads_features else [])
                         + (["standardize (fitted on the fitted rows)"] if detector.scale else []),
        "feature_columns": list(features.columns),
        "dropped_columns": [c for i, c in enumerate(features.columns) if i not in kept],
        "fit_rows": unit.fit_rows,
        "max_train": detector.max_train,
        "n_fit": fitted.n_fit,
        "contamination": getattr(last, "contamination", None),
        "pred_label": ("score above the threshold_ of its training scores (PyOD contamination)"
                       if getattr(last, "threshold_", None) is not None else
                       "P(anomaly) > 0.5 (the classifier's predict)" if isinstance(last, registry.ProbabilityDetector)
                       else "estimator predict"),
        "run_score": "max of the run's step scores (pred_label: max of its steps')",
        "split": unit.split_info,
        "fit_seconds": round(fitted.seconds, 4),
        "score_seconds": round(score_seconds, 4),
        "fit_cpu_seconds": round(fitted.cpu_seconds, 4),
        "score_cpu_seconds": round(float(sum(p.cpu_seconds for p in parts)), 4),
        "partitions": len(parts),
        "peak_memory_mb": round(grew, 1),
        "peak_rss_mb": round(rss, 1),
        "executor": executor,
        "versions": versions,
        "data_sources": data_sources,
        "test_metrics": {"n_pos": summary.n_pos, "n_neg": summary.n_neg, "roc_auc": summary.roc_auc,
                         "f1": summary.f1, "accuracy": summary.accuracy,
                         "balanced_accuracy": summary.balanced_accuracy, "notes": summary.notes},
    }
    row = {
        "set_id": set_id, "corpus": features.corpus, "method": detector.name, "family": detector.family,
        "supervision": detector.supervision, "granularity": "step", "protocol": None, "model": None,
        "seed": unit.seed, "params": json.dumps(_json_safe(params), sort_keys=True), "feature_set": features.feature_set,
        "slice": slice_json, "source": "rescore", "source_file": source, "created_at": created_at,
    }
    predictions = _prediction_rows(set_id, features, scores, labels, unit.test_step, unit.test_run)
    summary_row = SetSummary(set_id, features.corpus, detector.name, detector.family, detector.supervision,
                             unit.seed, features.feature_set, len(features), int(unit.test_step.sum()),
                             summary.n_pos, summary.n_neg, summary.roc_auc, fitted.seconds, score_seconds, grew,
                             summary.notes.get("roc_auc", ""), fitted.cpu_seconds,
                             float(sum(p.cpu_seconds for p in parts)))
    return row, predictions, summary_row


# =============================================================================================
# The public entry points


@dataclass
class RescoreResult:
    source: str | None  # the store source written (None when nothing was)
    sets: list[SetSummary]
    notes: list[str]
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)  # wall seconds: features, jobs, write


def slice_corpora(root: str | Path | None, slice: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per corpus of the slice: runs, steps, anomalous / normal / unlabeled step counts."""
    from queries import run

    return run("step_label_counts", {"slice": dict(slice or {})}, root=root).to_dict(orient="records")


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


def check_request(root: str | Path, detectors: Sequence[str], slice: Mapping[str, Any] | None,
                  feature_set: str = DEFAULT_FEATURE_SET) -> tuple[list[str], list[str]]:
    """Raise AtlasError (UndefinedMetric) for a request that cannot run; else return the
    scorable corpora and one sentence per corpus of the slice that is not."""
    _detector_list(detectors)
    check_feature_set(feature_set)
    counts = slice_corpora(root, {k: v for k, v in dict(slice or {}).items() if v})
    if not counts:
        raise UndefinedMetric(f"no run of the store matches the slice {json.dumps(dict(slice or {}), sort_keys=True)}.")
    corpora, notes = scorable_corpora(counts)
    if not corpora:
        raise UndefinedMetric(" ".join(notes))
    return corpora, notes


def _seed_list(seeds: int | Sequence[int]) -> list[int]:
    if isinstance(seeds, (int, np.integer)):
        if seeds < 1:
            raise AtlasError("seeds must be at least 1.")
        return list(range(int(seeds)))
    out = [int(s) for s in seeds]
    if not out:
        raise AtlasError("give at least one seed.")
    return out


def _detector_list(names: Sequence[str]) -> list[registry.Detector]:
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


def _corpus_sources(root: Path, corpus: str) -> dict[str, str]:
    """Store sources holding runs of ``corpus`` -> their folder (what a re-ingest replaces)."""
    import pyarrow.dataset as ds

    from ..store import read_manifest

    out = {}
    for name, entry in sorted(read_manifest(root)["sources"].items()):
        folder = root / str(entry.get("dir", "")) / "runs"
        if not folder.is_dir():
            continue
        table = ds.dataset(str(folder), format="parquet").to_table(columns=["corpus"])
        if corpus in set(table.column("corpus").unique().to_pylist()):
            out[name] = str(entry["dir"])
    return out


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
) -> RescoreResult:
    """Fit and score ``detectors`` on the slice, seed by seed; write every set; return summaries.

    ``seeds``: a count (seeds 0..n-1) or the seeds themselves. ``client``: a Dask client (see
    ``auditatlas.cluster``), or None to run in this process. Raises UndefinedMetric when no
    corpus of the slice holds both anomalous and normal labeled steps, Cancelled when
    ``should_stop`` turns true (nothing is then written).
    """
    began = time.perf_counter()
    root = Path(root)
    report = progress or (lambda fraction, message: None)
    chosen = _detector_list(detectors)
    seed_list = _seed_list(seeds)
    check_feature_set(feature_set)
    slice_ = {k: list(v) for k, v in dict(slice or {}).items() if v}

    def stop_check() -> None:
        if should_stop is not None and should_stop():
            raise Cancelled("re-score cancelled; nothing was written.")

    report(0.0, "checking the slice's labels")
    corpora, notes = check_request(root, detectors, slice_, feature_set)

    short = uuid.uuid4().hex[:8]
    source = f"{SOURCE_PREFIX}{short}"
    created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    versions = _versions()
    summaries: list[SetSummary] = []
    pending: list[tuple[dict, Any]] = []
    stages = dict.fromkeys(("features", "jobs", "assemble", "write"), 0.0)
    for corpus in corpora:
        c_index = corpora.index(corpus)
        share = 0.9 / len(corpora)
        base = c_index * share

        def sub(fraction: float, message: str, base=base, share=share) -> None:
            report(base + share * fraction, f"{corpus}: {message}")

        stop_check()
        t0 = time.perf_counter()
        features = step_features(root, corpus, slice_, feature_set, progress=lambda f, m: sub(0.15 * f, m))
        stages["features"] += time.perf_counter() - t0
        units, unit_notes = plan(features, chosen, seed_list, partition_rows, test_size)
        notes += unit_notes
        total = sum(1 + len(u.parts) for u in units)
        done = [0]

        def tick(message: str) -> None:
            done[0] += 1
            sub(0.15 + 0.8 * done[0] / max(total, 1), f"{message} ({done[0]}/{total} jobs)")
            stop_check()

        t0 = time.perf_counter()
        executor = execute(units, features.X, client, tick, should_stop)
        stages["jobs"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        data_sources = _corpus_sources(root, corpus)
        slice_json = json.dumps({**slice_, "corpus": [corpus]}, sort_keys=True)
        for unit in units:
            # One corpus (the usual case): <source>-<detector>-s<seed>; several: the corpus too.
            where = f"{corpus}-" if len(corpora) > 1 else ""
            set_id = f"{source}-{where}{unit.detector.name}-s{unit.seed}"
            row, predictions, summary = _set_record(unit, features, set_id, source, slice_json, executor,
                                                    created_at, data_sources, versions)
            pending.append((row, predictions))
            summaries.append(summary)
            unit.scored = []  # the arrays now live in the Arrow table only
        stages["assemble"] += time.perf_counter() - t0
        del features

    stop_check()
    if not pending:
        return RescoreResult(None, [], notes + ["nothing could be fitted; nothing was written."],
                             time.perf_counter() - began, stages)
    report(0.92, f"writing {len(pending)} prediction set(s) to the store as source '{source}'")
    t0 = time.perf_counter()
    _write(root, source, pending, {"format": "rescore", "origin": "auditatlas score", "sets": len(pending),
                                   "feature_set": feature_set, "slice": slice_})
    stages["write"] = time.perf_counter() - t0
    report(1.0, f"wrote {len(pending)} prediction set(s)")
    return RescoreResult(source, summaries, notes, time.perf_counter() - began,
                         {k: round(v, 3) for k, v in stages.items()})


WRITE_BATCH_ROWS = 2_000_000  # predictions per store batch: few batches, bounded memory


def _write(root: Path, source: str, pending: list[tuple[dict, Any]], meta: Mapping[str, Any]) -> dict:
    """All sets as one store source. Sets go in batches of up to WRITE_BATCH_ROWS predictions:
    the store ranks and sorts each batch, so 55 small sets cost one pass, not 55."""
    import pyarrow as pa

    from ..store import SourceWriter

    with SourceWriter(root, source) as writer:
        batch: list[tuple[dict, Any]] = []
        rows = 0
        for row, predictions in pending + [(None, None)]:
            if batch and (row is None or rows + predictions.num_rows > WRITE_BATCH_ROWS):
                writer.append({"prediction_sets": [r for r, _ in batch],
                               "predictions": pa.concat_tables([p for _, p in batch])})
                batch, rows = [], 0
            if row is not None:
                batch.append((row, predictions))
                rows += predictions.num_rows
        return writer.commit(dict(meta))


def run_standard_panel(root: str | Path, progress: Progress | None = None, *, client: Any = None,
                       seeds: int = STANDARD_PANEL_SEEDS) -> RescoreResult:
    """Every registry detector, 5 seeds, the default feature set, on the simulated corpus.

    What the default store build ends with, so the detector views have entrants from the
    first launch. In-process unless a Dask client is given. Returns without writing when the
    store holds no simulated corpus.
    """
    counts = slice_corpora(root, {"corpus": [STANDARD_PANEL_CORPUS]})
    if not counts or not int(counts[0]["steps"] or 0):
        return RescoreResult(None, [], [f"no '{STANDARD_PANEL_CORPUS}' corpus in the store; standard panel skipped."], 0.0)
    return score(root, registry.engine_detectors(), {"corpus": [STANDARD_PANEL_CORPUS]}, seeds,
                 DEFAULT_FEATURE_SET, client=client, progress=progress)


