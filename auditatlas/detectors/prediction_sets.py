"""What a scored unit becomes in the store: one ``prediction_sets`` row, its predictions, and
the summary the CLI and the re-score page show; and the write of one call's sets.

Predictions: one row per step (``split`` = the run's side of the split) plus one run-level
row per run (score = max of its steps' scores, pred_label = max of theirs: a run is as
suspicious as its most suspicious step).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .features import StepFeatures
from .jobs import Unit
from .provenance import peak_grew_mb, set_params

WRITE_BATCH_ROWS = 500_000  # predictions per store batch: a batch of 1M rows added about 450 MB while the store ranked and sorted it


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
    """The set's predictions as an Arrow table: step rows (in run order), then one run row per
    scored run.

    The string columns stay dictionary-encoded (run ids as int32 codes into the runs' ids, one
    shared array): a panel's sets wait in memory until one write, and at a million rooms each
    set is ten million rows, whose run ids as strings took gigabytes. The store casts them to
    its schema's strings (and the step index to its int64) a batch at a time (``write_sets``)."""
    import pyarrow as pa

    n_runs = len(features.runs)
    run_ids = pa.array(features.runs["run_id"]).cast(pa.string())  # Arrow's own strings: no Python str per run
    has_steps = np.zeros(n_runs, dtype=bool)
    has_steps[features.run_pos] = True
    runs_scored = np.flatnonzero(has_steps)
    run_score = _run_max(scores, features.run_pos, n_runs)[runs_scored]
    run_label = _run_max(labels.astype(np.float64), features.run_pos, n_runs)[runs_scored]
    sides = pa.array(["train", "test"], type=pa.string())

    def take(idx: np.ndarray):
        return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), run_ids)

    def side(mask: np.ndarray):
        return pa.DictionaryArray.from_arrays(pa.array(mask.astype(np.int8)), sides)

    def constant(value: str, n: int):
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int8)), pa.array([value]))

    n_steps = len(features)
    step_rows = pa.table({
        "set_id": constant(set_id, n_steps),
        "corpus": constant(features.corpus, n_steps),
        "run_id": take(features.run_pos),
        "step_idx": pa.array(features.step_idx.astype(np.int32)),  # the schema's int64 at the write
        "score": pa.array(scores, type=pa.float64()),
        "pred_label": pa.array(labels.astype(np.int8), type=pa.int8()),
        "split": side(test_step),
    })
    run_rows = pa.table({
        "set_id": constant(set_id, len(runs_scored)),
        "corpus": constant(features.corpus, len(runs_scored)),
        "run_id": take(runs_scored),
        "step_idx": pa.nulls(len(runs_scored), pa.int32()),
        "score": pa.array(run_score, type=pa.float64()),
        "pred_label": pa.array(run_label.astype(np.int8), type=pa.int8()),
        "split": side(test_run[runs_scored]),
    })
    return pa.concat_tables([step_rows, run_rows])


def run_pieces(predictions, max_rows: int) -> list:
    """``predictions`` cut into slices of at most ``max_rows`` rows (more only for one run larger
    than that), each cut where the run changes: the store ranks a run's step scores within a
    batch, so a run's rows must not be split across two."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = predictions.num_rows
    if n <= max_rows:
        return [predictions]
    runs = predictions.column("run_id").combine_chunks()
    codes = (runs if pa.types.is_dictionary(runs.type) else pc.dictionary_encode(runs)).indices
    codes = codes.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(codes[1:] != codes[:-1]) + 1  # rows where a run begins
    cuts = [0]
    while n - cuts[-1] > max_rows:
        at = np.searchsorted(starts, cuts[-1] + max_rows, side="right") - 1
        cut = int(starts[at]) if at >= 0 and starts[at] > cuts[-1] else None
        if cut is None:  # one run longer than max_rows: it goes whole, up to the next run
            later = starts[starts > cuts[-1]]
            cut = int(later[0]) if len(later) else n
        cuts.append(cut)
    cuts.append(n)
    return [predictions.slice(a, b - a) for a, b in zip(cuts, cuts[1:]) if b > a]


def set_record(unit: Unit, features: StepFeatures, set_id: str, source: str, slice_json: str,
               executor: str, created_at: str, data_sources: dict[str, str],
               versions: dict[str, str]) -> tuple[dict[str, Any], Callable[[], Any], SetSummary]:
    """The ``prediction_sets`` row, what makes its predictions table and the summary of one
    scored unit. The table is made when the set is written (``write_sets``): a panel's tables
    at once were 200 MB a set at a million rooms, its scores 9 MB a million steps."""
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
    predictions = partial(prediction_rows, set_id, features, scores, labels, unit.test_step, unit.test_run)
    summary_row = SetSummary(set_id, features.corpus, detector.name, detector.family, detector.supervision,
                             unit.seed, features.feature_set, len(features), int(unit.test_step.sum()),
                             summary.n_pos, summary.n_neg, summary.roc_auc, fitted.seconds, score_seconds,
                             peak_grew_mb(unit), summary.notes.get("roc_auc", ""), fitted.cpu_seconds,
                             score_cpu_seconds)
    return row, predictions, summary_row


def write_sets(root: Path, source: str, pending: list[tuple[dict, Callable[[], Any]]], meta: Mapping[str, Any]) -> dict:
    """All sets as one store source, in batches of up to WRITE_BATCH_ROWS predictions: a panel's
    many small sets go in one batch (the store ranks and sorts each batch: one pass, not one
    each), and a set of ten million rows goes a few runs at a time, so the ranking and the cast
    of its run ids to strings stay bounded by the batch."""
    import pyarrow as pa

    from ..store import SourceWriter

    with SourceWriter(root, source) as writer:
        rows_out: list[dict] = []
        pieces: list[Any] = []
        rows = 0

        def flush() -> None:
            nonlocal rows_out, pieces, rows
            if rows_out or pieces:
                writer.append({"prediction_sets": rows_out, "predictions": pa.concat_tables(pieces)})
            rows_out, pieces, rows = [], [], 0

        for row, make_predictions in pending:
            rows_out.append(row)
            for piece in run_pieces(make_predictions(), WRITE_BATCH_ROWS):
                if pieces and rows + piece.num_rows > WRITE_BATCH_ROWS:
                    flush()
                pieces.append(piece)
                rows += piece.num_rows
        flush()
        return writer.commit(dict(meta))
