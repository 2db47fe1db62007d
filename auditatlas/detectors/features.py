"""Step features for the detector engine: named feature sets computed in DuckDB from the store.

A feature set is a name recorded on every prediction set it produced:

- ``structural``: position (step index, fraction of the run, run length), action and agent
  one-hots, log tokens in / out, log duration, confidence (each with a has-value flag, since
  a corpus without token counts must not read as "zero tokens"), tool call, and dependency
  in / out degree and span from ``edges`` (``queries/sql/step_features.sql``);
- ``structural+text``: the above plus hashed word 1-2-grams of the step text
  (scikit-learn ``HashingVectorizer``, L2-normalised, ``TEXT_IN_FEATURES`` columns for the
  prompt and ``TEXT_OUT_FEATURES`` for the output): bounded width whatever the vocabulary.

What leaves DuckDB is numbers only (integer run positions and category codes, float
columns), and the matrix is float32: a million steps by 40 columns is 160 MB, which a Dask
worker can hold and receive. Run ids, backbones and grouping keys stay per run.

Features of different corpora mean different things (their actions and agents differ), so
features are computed, and detectors fitted, one corpus at a time.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AtlasError
from ..progress import Progress, or_quiet
from ..query_function import Query
from . import DEFAULT_FEATURE_SET, FEATURE_SETS

NUMERIC_COLUMNS: tuple[str, ...] = (
    "step_index", "position_frac", "run_steps",
    "log_tokens_in", "log_tokens_out", "has_tokens", "log_duration", "has_duration",
    "confidence", "has_confidence", "is_tool",
    "dep_in", "dep_out", "span_in_max", "span_in_mean", "span_out_max",
)
TEXT_IN_FEATURES = 16
TEXT_OUT_FEATURES = 32
TEXT_CHUNK_RUNS = 20_000  # runs per text query: bounds the text held in memory at once
FEATURE_CHUNK_RUNS = 100_000  # runs per read of the numeric features (about 900,000 simulated steps)
# Runs whose features the detector engine holds at once: a corpus with more is fitted on
# gathered rows and scored a chunk at a time (50,000 simulated runs: a 75 MB matrix; at a
# million rooms 1.6 s a read against 1.1 s for half as many, with 60 MB more at the peak).
SCORE_CHUNK_RUNS = 50_000


@dataclass
class StepFeatures:
    """The feature matrix of one corpus's steps in a slice, rows in (run, step) order.

    Per step: ``run_pos`` (row of ``runs``), ``step_idx``, ``label`` (NaN = unlabeled) and the
    row of ``X``. Per run: ``runs`` (run_id, corpus, backbone, task_id, room_id, difficulty,
    n_steps), in run_id order.
    """

    corpus: str
    feature_set: str
    runs: pd.DataFrame
    run_pos: np.ndarray  # int32, one per step
    step_idx: np.ndarray  # int64
    label: np.ndarray  # float64: 1, 0 or NaN
    action: np.ndarray  # int32 code into `actions` (-1 = none)
    X: np.ndarray  # float32 (steps x columns)
    columns: list[str]
    actions: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.step_idx)

    @property
    def labeled(self) -> np.ndarray:
        return ~np.isnan(self.label)

    def run_ids(self) -> np.ndarray:
        return self.runs["run_id"].to_numpy(dtype=object)


def check_feature_set(name: str) -> str:
    if name not in FEATURE_SETS:
        raise AtlasError(f"unknown feature set '{name}'; choose one of: {', '.join(FEATURE_SETS)}.")
    return name


def step_features(
    query: Query,
    corpus: str,
    slice: Mapping[str, Any] | None = None,
    feature_set: str = DEFAULT_FEATURE_SET,
    progress: Progress | None = None,
    chunk_runs: int = FEATURE_CHUNK_RUNS,
) -> StepFeatures:
    """Features of every step of ``corpus`` in ``slice`` (the slice's corpus filter is replaced),
    read through ``query`` (a named query's name and parameters -> its frame), as one matrix.

    Read ``chunk_runs`` runs at a time into one matrix made at its final size: at a million
    rooms the whole corpus's frame, its column copies and the stacked blocks held four times
    the matrix at once. A caller that can work a chunk at a time reads :class:`FeatureReader`'s
    chunks instead."""
    return FeatureReader(query, corpus, slice, feature_set, chunk_runs).every_step(progress)


class FeatureReader:
    """One corpus's step features in a slice, a chunk of ``chunk_runs`` runs at a time.

    ``keys`` reads every step's keys without its features; ``chunk(i)`` the features of the
    steps of chunk ``i`` (rows ``bounds[i]`` to ``bounds[i + 1]`` of the slice's steps in (run,
    step) order); ``every_step`` all of them as one matrix. The detector engine fits on the rows
    it gathers and scores chunk by chunk, so it never holds the corpus's matrix (1.5 GB of
    float32 at a million rooms). A chunk read that does not hold the rows the runs said means
    the store changed meanwhile: an error, never a misaligned row.
    """

    def __init__(self, query: Query, corpus: str, slice: Mapping[str, Any] | None = None,
                 feature_set: str = DEFAULT_FEATURE_SET, chunk_runs: int = FEATURE_CHUNK_RUNS,
                 runs: pd.DataFrame | None = None) -> None:
        check_feature_set(feature_set)
        self.query, self.corpus, self.feature_set = query, corpus, feature_set
        self.sliced = {**dict(slice or {}), "corpus": [corpus]}
        # ``runs``: the slice's runs as a caller read them before (``step_feature_runs``, or only
        # its ``run_pos`` column: then the chunks' row counts are not known ahead, and only
        # ``chunk`` reads), so a caller reading the corpus again does not read every run's keys
        # and names again (about 450 MB at a million rooms).
        self.runs = runs if runs is not None else query("step_feature_runs", {"slice": self.sliced})
        self.actions, self.agents, self.columns = _vocabulary(query, self.sliced)
        self.text = feature_set == "structural+text"
        if self.text:
            self.columns += ([f"text_in#{i}" for i in range(TEXT_IN_FEATURES)]
                             + [f"text_out#{i}" for i in range(TEXT_OUT_FEATURES)])
        n_runs = len(self.runs)
        self.chunk_runs = chunk_runs
        self.ranges = [(lo, min(n_runs, lo + chunk_runs)) for lo in range(0, max(n_runs, 1), chunk_runs)]
        self._chunk_ids: pd.DataFrame | None = None  # each chunk's first and last run id, when runs has no ids
        self.bounds: list[int] | None = None
        if "n_steps" in self.runs:
            first_step = np.concatenate([[0], np.cumsum(self.runs["n_steps"].to_numpy(np.int64))])
            self.bounds = [int(first_step[lo]) if n_runs else 0 for lo, _ in self.ranges] + [int(first_step[-1])]
            self.n_steps = self.bounds[-1]

    @property
    def whole(self) -> bool:
        """One chunk: the matrix is read in one query (without the run positions' range)."""
        return len(self.ranges) == 1

    def _changed(self) -> AtlasError:
        return AtlasError("the store changed while step features were read; run the re-score again.")

    def _range(self, i: int) -> dict[str, Any]:
        lo, hi = self.ranges[i]
        if self.whole:
            return {"lo": None, "hi": None, "run_from": None, "run_to": None}
        return {"lo": lo, "hi": hi, **self.run_range(lo, hi)}

    def run_range(self, lo: int, hi: int) -> dict[str, Any]:
        """The first and last run id of the runs at positions [lo, hi) (None when not known): a
        chunked query bounds its scans of steps and edges by them, so a read touches its own
        runs' row groups, not the corpus's (0.2 s against 1 s a chunk at a million rooms)."""
        if "run_id" in self.runs:
            return run_range(self.runs["run_id"], lo, hi)
        # A caller that let the run ids go (label doubt's later reads): the chunks' bounds read once.
        i = lo // self.chunk_runs
        if hi <= lo or i >= len(self.ranges) or self.ranges[i] != (lo, hi):
            return {"run_from": None, "run_to": None}
        if self._chunk_ids is None:
            self._chunk_ids = self.query("step_feature_chunks", {"slice": self.sliced, "chunk": self.chunk_runs})
            if len(self._chunk_ids) != len(self.ranges):
                raise self._changed()
        return {"run_from": str(self._chunk_ids["run_from"].iat[i]), "run_to": str(self._chunk_ids["run_to"].iat[i])}

    def _read(self, i: int) -> pd.DataFrame:
        """Chunk ``i``'s steps with their numeric features, as many as its runs said."""
        chunk = self.query("step_features", {"slice": self.sliced, "actions": self.actions, "agents": self.agents,
                                             **self._range(i)})
        if self.bounds is not None and len(chunk) != self.bounds[i + 1] - self.bounds[i]:
            raise self._changed()
        return chunk

    def _fill(self, out: _Matrix, i: int, report: Progress, chunk: pd.DataFrame | None = None) -> None:
        """Chunk ``i``'s features (``chunk`` when read already) into ``out`` from its current row on."""
        start = out.row
        chunk = chunk if chunk is not None else self._read(i)
        out.fill(chunk, len(self.actions), len(self.agents))
        del chunk
        if self.text:
            width = TEXT_IN_FEATURES + TEXT_OUT_FEATURES
            # The hashing's own progress only when it is the whole read's (a chunk's would go back).
            _text_features(self.query, self.sliced, *self.ranges[i], out.X[start:out.row, len(self.columns) - width:],
                           report if self.whole else or_quiet(None), self.run_range)

    def every_step(self, progress: Progress | None = None) -> StepFeatures:
        """Every step's features as one matrix."""
        report = or_quiet(progress)
        out = _Matrix(self.n_steps, len(self.columns))
        for i in range(len(self.ranges)):
            report(0.2 + 0.7 * i / len(self.ranges), f"reading step features of {len(self.runs):,} runs")
            self._fill(out, i, report)
        report(0.9, "features ready")
        return out.features(self.corpus, self.feature_set, self.runs, self.columns, self.actions)

    def chunk(self, i: int, progress: Progress | None = None) -> StepFeatures:
        """Chunk ``i``'s steps with their features (``runs`` is every run of the slice)."""
        chunk = self._read(i)
        out = _Matrix(len(chunk), len(self.columns))
        self._fill(out, i, or_quiet(progress), chunk)
        del chunk
        return out.features(self.corpus, self.feature_set, self.runs, self.columns, self.actions)

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """Rows ``rows`` (sorted, unique) of the matrix, read a chunk at a time: the fits' rows."""
        out = np.empty((len(rows), len(self.columns)), dtype=np.float32)
        for i in range(len(self.ranges)):
            a, b = np.searchsorted(rows, [self.bounds[i], self.bounds[i + 1]])
            if a < b:
                out[a:b] = self.chunk(i).X[rows[a:b] - self.bounds[i]]
        return out

    def keys(self, progress: Progress | None = None) -> StepFeatures:
        """Every step's keys (run, step, label, action) with a matrix of no column: what a split
        and a fit's rows are chosen on."""
        report = or_quiet(progress)
        out = _Matrix(self.n_steps, 0)
        for i, (lo, hi) in enumerate(self.ranges):
            report(0.2 * i / len(self.ranges), f"reading the keys of {len(self.runs):,} runs' steps")
            chunk = self.query("step_feature_keys", {"slice": self.sliced, "actions": self.actions, "lo": lo,
                                                     "hi": hi, **self.run_range(lo, hi)})
            if len(chunk) != self.bounds[i + 1] - self.bounds[i]:
                raise self._changed()
            out.fill(chunk, 0, 0, columns=False)
            del chunk
        if out.row != self.n_steps:
            raise self._changed()
        return out.features(self.corpus, self.feature_set, self.runs, self.columns, self.actions)


def run_range(run_ids: pd.Series, lo: int, hi: int) -> dict[str, Any]:
    """``run_from`` and ``run_to`` of a chunked query (``_in_run_range.sql``): the first and last
    of ``run_ids`` (in run id order) at positions [lo, hi), None for an empty range."""
    if hi <= lo:
        return {"run_from": None, "run_to": None}
    return {"run_from": str(run_ids.iat[lo]), "run_to": str(run_ids.iat[hi - 1])}


def _vocabulary(query: Query, sliced: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """The slice's actions and agents, in their one-hot order, and the structural columns."""
    vocab = query("step_feature_vocab", {"slice": sliced})
    actions = vocab.loc[vocab["kind"] == "action", "value"].astype(str).tolist()
    agents = vocab.loc[vocab["kind"] == "agent", "value"].astype(str).tolist()
    return actions, agents, list(NUMERIC_COLUMNS) + [f"action={a}" for a in actions] + [f"agent={a}" for a in agents]


class _Matrix:
    """A feature matrix and its per-step arrays, filled a chunk of runs at a time in run order."""

    def __init__(self, n_steps: int, width: int) -> None:
        self.X = np.zeros((n_steps, width), dtype=np.float32)
        self.run_pos = np.empty(n_steps, dtype=np.int32)
        self.step_idx = np.empty(n_steps, dtype=np.int64)
        self.label = np.empty(n_steps, dtype=np.float64)
        self.action = np.empty(n_steps, dtype=np.int32)
        self.row = 0

    def fill(self, steps: pd.DataFrame, n_actions: int, n_agents: int, columns: bool = True) -> None:
        """The next rows: one chunk's steps (whole runs, after those filled before), put in
        (run, step) order; their keys only when not ``columns``."""
        n = len(steps)
        if not n:
            return
        run_pos = steps["run_pos"].to_numpy(dtype=np.int32)
        step_idx = steps["step_idx"].to_numpy(dtype=np.int64)
        order = np.lexsort((step_idx, run_pos))  # (run, step) order: the text chunks come the same way
        rows = slice(self.row, self.row + n)
        self.run_pos[rows] = run_pos[order]
        self.step_idx[rows] = step_idx[order]
        self.label[rows] = steps["label"].to_numpy(dtype=np.float64)[order]
        if not columns:
            self.action[rows] = steps["action_code"].to_numpy(dtype=np.int32)[order] - 1
            self.row += n
            return
        width = len(NUMERIC_COLUMNS)
        for j, name in enumerate(NUMERIC_COLUMNS):
            self.X[rows, j] = steps[name].to_numpy(dtype=np.float32)[order]
        action_code = steps["action_code"].to_numpy(dtype=np.int32)[order]
        agent_code = steps["agent_code"].to_numpy(dtype=np.int32)[order]
        self.action[rows] = action_code - 1
        _one_hot_into(self.X[rows, width:width + n_actions], action_code)
        _one_hot_into(self.X[rows, width + n_actions:width + n_actions + n_agents], agent_code)
        self.row += n

    def features(self, corpus: str, feature_set: str, runs: pd.DataFrame, columns: list[str],
                 actions: list[str]) -> StepFeatures:
        return StepFeatures(corpus=corpus, feature_set=feature_set, runs=runs, run_pos=self.run_pos,
                            step_idx=self.step_idx, label=self.label, action=self.action, X=self.X,
                            columns=columns, actions=actions)


def structural_chunks(query: Query, corpus: str, slice: Mapping[str, Any] | None = None,
                      chunk_runs: int = TEXT_CHUNK_RUNS, runs: pd.DataFrame | None = None) -> Iterator[StepFeatures]:
    """The ``structural`` features of ``step_features``, ``chunk_runs`` runs at a time, in (run,
    step) order (:meth:`FeatureReader.chunk`): each chunk's ``runs`` is every run of the slice
    (run_pos is the row there), its rows that chunk's steps. What a caller that reads every step
    of a large corpus holds at once is then one chunk's rows, not the corpus's. ``runs``: as
    :class:`FeatureReader` takes them."""
    reader = FeatureReader(query, corpus, slice, DEFAULT_FEATURE_SET, chunk_runs, runs=runs)
    for i in range(len(reader.ranges)):
        yield reader.chunk(i)


def _one_hot_into(block: np.ndarray, codes: np.ndarray) -> None:
    """1-based codes (0 = none) as 0/1 columns of ``block`` (rows x width, zeros before)."""
    rows = np.flatnonzero(codes > 0)
    block[rows, codes[rows] - 1] = 1.0


def _vectorizer(n_features: int):
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=n_features, ngram_range=(1, 2), alternate_sign=False, norm="l2",
                             dtype=np.float32)


def _text_features(query: Query, sliced: Mapping[str, Any], lo: int, hi: int, block: np.ndarray,
                   report: Progress, run_range: Callable[[int, int], dict[str, Any]]) -> None:
    """Hashed n-grams of text_in and text_out of the steps of runs [lo, hi) into ``block``
    (their steps x text columns, in (run, step) order), read TEXT_CHUNK_RUNS runs at a time
    (``run_range``: their first and last run ids, as :meth:`FeatureReader.run_range`)."""
    n_steps = len(block)
    hash_in, hash_out = _vectorizer(TEXT_IN_FEATURES), _vectorizer(TEXT_OUT_FEATURES)
    row = 0
    for at in range(lo, max(hi, lo + 1), TEXT_CHUNK_RUNS):
        end = min(hi, at + TEXT_CHUNK_RUNS)
        texts = query("step_texts", {"slice": sliced, "lo": at, "hi": end, **run_range(at, end)})
        n = len(texts)
        if row + n > n_steps:
            raise AtlasError("the store changed while step text was read; run the re-score again.")
        if n:
            block[row:row + n, :TEXT_IN_FEATURES] = hash_in.transform(texts["text_in"]).toarray()
            block[row:row + n, TEXT_IN_FEATURES:] = hash_out.transform(texts["text_out"]).toarray()
        row += n
        report(0.5 + 0.4 * min(1.0, (at - lo + TEXT_CHUNK_RUNS) / max(hi - lo, 1)), f"hashed the text of {row:,} steps")
    if row != n_steps:
        raise AtlasError("the store changed while step text was read; run the re-score again.")
