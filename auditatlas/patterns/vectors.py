"""A built store version's step vectors, memory-mapped: rows, the slice's mask, text scores."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .. import leases
from ..errors import AtlasError
from ..schema import SLICE_COLUMNS
from .build import DONE, FEATURES


@dataclass
class Shard:
    start: int
    stop: int
    rows: tuple[np.ndarray, np.ndarray, np.ndarray]  # indptr, indices, data (row-major)
    index: tuple[np.ndarray, np.ndarray, np.ndarray]  # the same, column-major


class StepVectors:
    """One build (``build.py``): per-step arrays, per-run table, shards of sparse text vectors."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        meta = json.loads((folder / DONE).read_text())
        self.n_rows: int = meta["rows"]
        self.actions: list[str] = meta["actions"]
        self.agents: list[str] = meta["agents"]
        self.lease = leases.hold(folder, shared=True)  # no sweep removes a build being read
        self.step = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in FEATURES}
        self.runs = pd.read_parquet(folder / "runs.parquet")
        self.run_ids = self.runs["run_id"].to_numpy(dtype=object)  # sorted: the rows' run order
        n_steps = self.runs["n_steps"].to_numpy(dtype=np.int64)
        self.run_start = np.concatenate(([0], np.cumsum(n_steps)))
        self.shards = [self._shard(i, lo, hi) for i, (lo, hi) in enumerate(meta["shards"])]
        self.shard_starts = np.array([s.start for s in self.shards], dtype=np.int64)
        self._factorized: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._columns: dict[str, np.ndarray] = {}

    def _shard(self, i: int, lo: int, hi: int) -> Shard:
        base = self.folder / f"shard-{i}"
        load = lambda name: tuple(np.load(base / f"{name}_{part}.npy", mmap_mode="r")  # noqa: E731
                                  for part in ("indptr", "indices", "data"))
        return Shard(lo, hi, load("rows"), load("index"))

    # -- where a step is -------------------------------------------------------------------

    def row_of(self, run_id: str, step_idx: int) -> int | None:
        """The row of step ``step_idx`` of run ``run_id``; None when the store has no such step."""
        pos = int(np.searchsorted(self.run_ids, run_id))
        if pos >= len(self.run_ids) or self.run_ids[pos] != run_id:
            return None
        if not 0 <= step_idx < self.run_start[pos + 1] - self.run_start[pos]:
            return None
        return int(self.run_start[pos] + step_idx)

    def has_run(self, run_id: str) -> bool:
        pos = int(np.searchsorted(self.run_ids, run_id))
        return pos < len(self.run_ids) and self.run_ids[pos] == run_id

    def rows_of(self, keys: Iterable[tuple[str, int]]) -> np.ndarray:
        rows = [self.row_of(str(r), int(s)) for r, s in keys]
        return np.array([r for r in rows if r is not None], dtype=np.int64)

    def run_mask(self, slice_: Mapping[str, Any] | None) -> np.ndarray:
        """Per run (the rows of ``runs``): whether it is in the slice (the shared slice's meaning:
        every filtered column holds one of its values; an empty column filters nothing)."""
        keep = np.ones(len(self.runs), dtype=bool)
        for column in SLICE_COLUMNS:
            values = list((slice_ or {}).get(column) or [])
            if not values:
                continue
            if column == "temperature":
                held = self.runs[column].to_numpy(dtype=np.float64)
                keep &= np.isin(held, [float(v) for v in values])
            else:
                codes, names = self._codes(column)
                wanted = np.append(np.isin(names, [str(v) for v in values]), False)  # code -1: missing
                keep &= wanted[codes]
        return keep

    def _codes(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """A slice column's values as codes into its distinct names (-1: missing), once per open:
        a slice is then a look-up in a few names, not a million string comparisons."""
        found = self._factorized.get(column)
        if found is None:
            codes, names = pd.factorize(self.runs[column].astype("string"))
            found = self._factorized[column] = (codes, np.asarray(names, dtype=object).astype(str))
        return found

    def _objects(self, column: str) -> np.ndarray:
        """A run column as an object array, made once per open (a million runs: not per answer)."""
        found = self._columns.get(column)
        if found is None:
            found = self._columns[column] = self.runs[column].to_numpy(dtype=object)
        return found

    def slice_mask(self, slice_: Mapping[str, Any] | None) -> np.ndarray:
        """Per row: whether its run is in the slice (``run_mask``)."""
        return np.repeat(self.run_mask(slice_), np.diff(self.run_start))

    def keys(self, rows: np.ndarray) -> pd.DataFrame:
        """run_id, step_idx, backbone, corpus, action, agent, label of ``rows``."""
        run_pos = np.asarray(self.step["run_pos"][rows])
        action, agent = np.asarray(self.step["action"][rows]), np.asarray(self.step["agent"][rows])
        label = np.asarray(self.step["label"][rows]).astype(np.float64)
        label[label < 0] = np.nan
        return pd.DataFrame({
            "run_id": self.run_ids[run_pos],
            "step_idx": np.asarray(self.step["step_idx"][rows]).astype(np.int64),
            "corpus": self._objects("corpus")[run_pos],
            "backbone": self._objects("backbone")[run_pos],
            "action": _names(self.actions, action),
            "agent": _names(self.agents, agent),
            "label": label,
        })

    # -- text ------------------------------------------------------------------------------

    def text_rows(self, rows: np.ndarray) -> sp.csr_matrix:
        """The text vectors of ``rows`` (global row numbers), in that order (vectorised per shard)."""
        from .text import N_FEATURES

        rows = np.asarray(rows, dtype=np.int64)
        which = np.searchsorted(self.shard_starts, rows, side="right") - 1
        lengths = np.zeros(len(rows), dtype=np.int64)
        starts = np.zeros(len(rows), dtype=np.int64)
        for i in np.unique(which):
            at = np.flatnonzero(which == i)
            indptr = self.shards[i].rows[0]
            local = rows[at] - self.shards[i].start
            starts[at] = indptr[local]
            lengths[at] = indptr[local + 1] - starts[at]
        out_ptr = np.concatenate(([0], np.cumsum(lengths)))
        indices = np.zeros(out_ptr[-1], dtype=np.int32)
        data = np.zeros(out_ptr[-1], dtype=np.float32)
        for i in np.unique(which):
            at = np.flatnonzero(which == i)
            # Positions of every entry of these rows in the shard's arrays, in output order.
            n = lengths[at]
            target = np.repeat(out_ptr[at], n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
            source = np.repeat(starts[at], n) + (target - np.repeat(out_ptr[at], n))
            _, shard_indices, shard_data = self.shards[i].rows
            indices[target] = shard_indices[source]
            data[target] = shard_data[source]
        return sp.csr_matrix((data, indices, out_ptr), shape=(len(rows), N_FEATURES))

    def release(self) -> None:
        """Let go of the pages of the build's files this process has read (they stay in the page
        cache): a pass over every row, a chunk at a time, then holds one chunk's pages, not the
        build's gigabytes, in its resident memory."""
        import mmap

        arrays = list(self.step.values()) + [part for shard in self.shards for part in shard.rows + shard.index]
        for array in arrays:
            held = getattr(array, "_mmap", None)
            if held is not None and hasattr(held, "madvise"):
                held.madvise(mmap.MADV_DONTNEED)

    def text_scores(self, columns: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Per row: the dot product of its text vector with the sparse vector (columns, weights),
        read from the inverted index (only the postings of ``columns`` are touched; compiled:
        ``kernels.add_postings``)."""
        from .kernels import add_postings

        scores = np.zeros(self.n_rows, dtype=np.float32)
        columns = np.ascontiguousarray(columns, dtype=np.int64)
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        for shard in self.shards:
            indptr, indices, data = (np.asarray(part) for part in shard.index)
            add_postings(scores, shard.start, indptr, indices, data, columns, weights)
        return scores


def _names(vocab: list[str], codes: np.ndarray) -> np.ndarray:
    names = np.array(list(vocab) + [None], dtype=object)
    return names[np.where(codes < 0, len(vocab), codes)]


_OPEN: dict[Path, StepVectors] = {}
_OPEN_LOCK = threading.Lock()


def open_vectors(folder: Path) -> StepVectors:
    """The build in ``folder``, opened once per process (the app keeps the newest two)."""
    with _OPEN_LOCK:
        vectors = _OPEN.get(folder)
        if vectors is None:
            if not (folder / DONE).is_file():
                raise AtlasError(f"no step vectors are built in {folder}.")
            vectors = _OPEN[folder] = StepVectors(folder)
            for old in list(_OPEN)[:-2]:
                gone = _OPEN.pop(old)
                if gone.lease is not None:
                    gone.lease.release()
        return vectors


def load(root: str | Path, query: Any, progress: Any = None) -> StepVectors:
    """The step vectors of the store version at ``root`` now (built first when missing), read
    through ``query`` (the caller's query function: the app's cached one, or ``queries.runner``)."""
    from .build import ensure

    return open_vectors(ensure(root, query, progress))
