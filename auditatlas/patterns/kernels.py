"""The inverted index's one hot loop, compiled (numba, kept in its on-disk cache).

Reading the postings of an anchor's words is most of "steps like this one": about 6 postings
per step (5.6M at 100,000 rooms, ~56M at a million). In numpy each column's postings cost a
slice, an offset, a product, a gather and a scatter (~9 ns a posting, five passes over
temporaries); compiled, each posting is one read of its row and weight and one add into the
shard's scores, which stay in the CPU's cache.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def add_postings(scores: np.ndarray, start: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                 columns: np.ndarray, weights: np.ndarray) -> None:  # pragma: no cover - compiled
    """``scores[start + row] += weight * value`` for every posting (row, value) of each column."""
    for j in range(columns.shape[0]):
        column = columns[j]
        weight = weights[j]
        for p in range(indptr[column], indptr[column + 1]):
            scores[start + indices[p]] += weight * data[p]
