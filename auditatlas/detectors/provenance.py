"""Provenance of a re-scored prediction set: the ``params`` JSON that says how it was made.

``params`` holds, at top level:

- ``detector``, ``title``, ``estimator`` (class path), ``estimator_params`` (``get_params``,
  JSON-safe), ``preprocessing`` (what was done before fitting), ``feature_columns`` (names),
  ``dropped_columns`` (constant on the fitted rows);
- ``fit_rows`` (which rows the fit used: ``Detector.training_rows``), ``max_train`` (the cap,
  or null), ``n_fit`` (rows actually fitted on), ``contamination`` (PyOD threshold share, where
  there is one), ``pred_label`` (how the decision was made), ``run_score`` (how run rows are
  made);
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..store import read_manifest, source_corpora
from .features import StepFeatures
from .jobs import Unit, decision_rule, estimator
from .metrics import Summary

RUN_SCORE = "max of the run's step scores (pred_label: max of its steps')"


def json_safe(value: Any) -> Any:
    """``value`` as JSON can hold it: non-finite floats as text, estimators by class name."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return json_safe(float(value))
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if hasattr(value, "get_params"):
        return type(value).__name__
    return repr(value)


def estimator_params(model: Any) -> dict[str, Any]:
    """``get_params(deep=True)`` as JSON: nested estimators by class name, leaves as values."""
    return {k: json_safe(v) for k, v in sorted(model.get_params(deep=True).items())}


def versions() -> dict[str, str]:
    """Versions of the libraries that fit and scored (``params.versions``), read from the installed
    distributions: importing PyOD for its version cost a panel without a PyOD detector a second
    or two."""
    from importlib.metadata import version

    return {"scikit-learn": version("scikit-learn"), "pyod": version("pyod"), "numpy": np.__version__}


def data_sources(root: str | Path, corpus: str) -> dict[str, str]:
    """Store sources holding runs of ``corpus`` -> their folder (what a re-ingest replaces)."""
    root = Path(root)
    manifest = read_manifest(root)
    holding = [name for name, corpora in source_corpora(root, manifest).items() if corpus in corpora]
    return {name: str(manifest["sources"][name]["dir"]) for name in sorted(holding)}


def set_params(unit: Unit, features: StepFeatures, summary: Summary, executor: str,
               versions: dict[str, str], data_sources: dict[str, str]) -> str:
    """The ``params`` JSON of the prediction set ``unit`` became (keys sorted)."""
    fitted, parts, detector = unit.fitted, unit.scored, unit.detector
    assert fitted is not None and parts, "a unit's provenance is written only after all its jobs ran"
    kept = set(range(len(features.columns)) if fitted.keep is None else fitted.keep.tolist())
    params = {
        "detector": detector.name,
        "title": detector.title,
        "estimator": detector.estimator_class,
        "estimator_params": estimator_params(fitted.model),
        "preprocessing": (["drop columns constant on the fitted rows"] if detector.reads_features else [])
                         + (["standardize (fitted on the fitted rows)"] if detector.scale else []),
        "feature_columns": list(features.columns),
        "dropped_columns": [c for i, c in enumerate(features.columns) if i not in kept],
        "fit_rows": unit.training.described,
        "max_train": detector.max_train,
        "n_fit": fitted.n_fit,
        "contamination": getattr(estimator(fitted.model), "contamination", None),
        "pred_label": decision_rule(fitted.model),
        "run_score": RUN_SCORE,
        "split": unit.split_info,
        "fit_seconds": round(fitted.seconds, 4),
        "score_seconds": round(float(sum(p.seconds for p in parts)), 4),
        "fit_cpu_seconds": round(fitted.cpu_seconds, 4),
        "score_cpu_seconds": round(float(sum(p.cpu_seconds for p in parts)), 4),
        "partitions": len(parts),
        "peak_memory_mb": round(peak_grew_mb(unit), 1),
        "peak_rss_mb": round(max([fitted.rss_mb] + [p.rss_mb for p in parts]), 1),
        "executor": executor,
        "versions": versions,
        "data_sources": data_sources,
        "test_metrics": {"n_pos": summary.n_pos, "n_neg": summary.n_neg, "roc_auc": summary.roc_auc,
                         "f1": summary.f1, "accuracy": summary.accuracy,
                         "balanced_accuracy": summary.balanced_accuracy, "notes": summary.notes},
    }
    return json.dumps(json_safe(params), sort_keys=True)


def peak_grew_mb(unit: Unit) -> float:
    """The most a job's process grew over the unit's fit and score jobs, in MiB."""
    return max([unit.fitted.grew_mb] + [p.grew_mb for p in unit.scored])
