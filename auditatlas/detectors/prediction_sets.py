"""What a scored unit becomes in the store: one ``prediction_sets`` row, its predictions, and
the summary the CLI and the re-score page show; and the write of one call's sets.

Predictions: one row per step (``split`` = the run's side of the split) plus one run-level
row per run (score = max of its steps' scores, pred_label = max of theirs: a run is as
suspicious as its most suspicious step).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .features import StepFeatures
from .jobs import Unit
from .provenance import peak_grew_mb, set_params

WRITE_BATCH_ROWS = 2_000_000  # predictions per store batch: few batches, bounded memory


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


def _run_max(values: np.ndarray, run_pos: np.ndarray, n_runs: int) -> np.ndarray:
    out = np.full(n_runs, -np.inf)
    np.maximum.at(out, run_pos, values)
    return out


def prediction_rows(set_id: str, features: StepFeatures, scores: np.ndarray, labels: np.ndarray,
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


def set_record(unit: Unit, features: StepFeatures, set_id: str, source: str, slice_json: str,
               executor: str, created_at: str, data_sources: dict[str, str],
               versions: dict[str, str]) -> tuple[dict[str, Any], Any, SetSummary]:
    """The ``prediction_sets`` row, the predictions table and the summary of one scored unit."""
    from .metrics import summarize

    fitted = unit.fitted
    assert fitted is not None and unit.scored, "a unit is written only after all its jobs ran"
    parts = unit.scored
    scores, labels = unit.scores()
    score_seconds = float(sum(p.seconds for p in parts))
    score_cpu_seconds = float(sum(p.cpu_seconds for p in parts))

    test = unit.test_step & features.labeled
    summary = summarize(features.label[test].astype(np.int64), scores[test], labels[test])
    detector = unit.detector
    row = {
        "set_id": set_id, "corpus": features.corpus, "method": detector.name, "family": detector.family,
        "supervision": detector.supervision, "granularity": "step", "protocol": None, "model": None,
        "seed": unit.seed, "params": set_params(unit, features, summary, executor, versions, data_sources),
        "feature_set": features.feature_set, "slice": slice_json, "origin": "rescore", "source_file": source,
        "created_at": created_at,
    }
    predictions = prediction_rows(set_id, features, scores, labels, unit.test_step, unit.test_run)
    summary_row = SetSummary(set_id, features.corpus, detector.name, detector.family, detector.supervision,
                             unit.seed, features.feature_set, len(features), int(unit.test_step.sum()),
                             summary.n_pos, summary.n_neg, summary.roc_auc, fitted.seconds, score_seconds,
                             peak_grew_mb(unit), summary.notes.get("roc_auc", ""), fitted.cpu_seconds,
                             score_cpu_seconds)
    return row, predictions, summary_row


def write_sets(root: Path, source: str, pending: list[tuple[dict, Any]], meta: Mapping[str, Any]) -> dict:
    """All sets as one store source. Sets go in batches of up to WRITE_BATCH_ROWS predictions:
    the store ranks and sorts each batch, so a panel's many small sets cost one pass, not one each."""
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
