"""The text half of a step vector: hashed words, tf-idf weights, each step's heaviest words."""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd
import scipy.sparse as sp

# 2**18 columns: collisions among a templated trace vocabulary (a few thousand words) are rare.
N_FEATURES = 2 ** 18
# A step keeps its heaviest words only: bounds the vectors (9.3M steps x 32) and keeps the
# postings of common words short, which is what makes a neighbour query fast.
TERMS_PER_STEP = 32
# Letters only: numbers and ids (room_0042, note_p1, 101) name a run, not a kind of step.
TOKEN_PATTERN = r"(?u)\b[^\W\d_]{2,}\b"


@lru_cache(maxsize=1)
def hasher():
    """The stateless vectorizer: raw word counts in N_FEATURES hashed columns."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=N_FEATURES, token_pattern=TOKEN_PATTERN, lowercase=True,
                             alternate_sign=False, norm=None, dtype=np.float32)


def counts(*texts: Sequence[str]) -> sp.csr_matrix:
    """Sublinear term frequencies (1 + ln count) of each step's words, one row per step: ``texts``
    are aligned lists (each step's input, its output) whose words count together.

    Each distinct text is hashed once and its row shared: the hashing is most of a build's time,
    and prompts and outputs repeat across steps (at a million simulated rooms a batch holds a
    half to two thirds as many distinct inputs and outputs as steps). A word never spans two
    texts, so a step's counts are the sum of its texts' counts.
    """
    n = len(texts[0]) if texts else 0
    if not n:  # scikit-learn's hasher raises StopIteration on no document (a store without steps)
        return sp.csr_matrix((0, N_FEATURES), dtype=np.float32)
    matrix = None
    for part in texts:
        codes, distinct = pd.factorize(np.asarray(part, dtype=object))
        rows = hashed(distinct)[codes]
        matrix = rows if matrix is None else matrix + rows
    matrix.sum_duplicates()
    np.log(matrix.data, out=matrix.data)
    matrix.data += 1.0
    return matrix


# The token pattern's words in an ASCII text: runs of word characters (letters, digits, "_")
# between other characters, kept when they are letters only, two or more (``TOKEN_PATTERN``
# after lower-casing: a word boundary, two or more letters, a word boundary).
_ASCII_GAPS = r"[^a-z0-9_]+"
_ASCII_WORD = r"^[a-z]{2,}$"


def hashed(texts: Sequence[str]) -> sp.csr_matrix:
    """``hasher().transform(texts)``, the same matrix, with each distinct word hashed once.

    scikit-learn tokenizes and hashes word by word in Python, which was most of the step
    vectors' build at a million rooms. An ASCII text is split into its words by Arrow (the
    token pattern's words, read the same way) and each distinct word's column is scikit-learn's
    own hash of it; a text with other characters goes through scikit-learn whole, whose Unicode
    word characters the split does not know.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    if not n:
        return sp.csr_matrix((0, N_FEATURES), dtype=np.float32)
    column = pa.array(list(texts), type=pa.large_string())
    plain = pc.fill_null(pc.string_is_ascii(column), False).to_numpy(zero_copy_only=False)
    fast, slow = np.flatnonzero(plain), np.flatnonzero(~plain)
    rows, columns = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    if len(fast):
        words = pc.split_pattern_regex(pc.ascii_lower(column.take(pa.array(fast))), _ASCII_GAPS)
        flat, parent = pc.list_flatten(words), pc.list_parent_indices(words)
        keep = pc.match_substring_regex(flat, _ASCII_WORD)
        flat, parent = flat.filter(keep), parent.filter(keep)
        if len(flat):
            encoded = pc.dictionary_encode(flat)
            rows.append(fast[parent.to_numpy()])
            columns.append(word_columns(encoded.dictionary.to_pylist()).astype(np.int64)[encoded.indices.to_numpy()])
    if len(slow):
        whole = hasher().transform([texts[i] for i in slow]).tocoo()
        repeat = whole.data.astype(np.int64)  # counts: each its column repeated that many times
        rows.append(np.repeat(slow[whole.row], repeat))
        columns.append(np.repeat(whole.col.astype(np.int64), repeat))
    rows_all, columns_all = np.concatenate(rows), np.concatenate(columns)
    matrix = sp.csr_matrix((np.ones(len(rows_all), dtype=np.float32), (rows_all, columns_all)),
                           shape=(n, N_FEATURES), dtype=np.float32)
    matrix.sum_duplicates()
    return matrix


def word_columns(words: list[str]) -> np.ndarray:
    """The hashed column of each of ``words`` (single tokens of the pattern, lower-case)."""
    hashed_words = hasher().transform(words).tocsr()
    # A word alone is one token, so its row holds one column.
    assert (np.diff(hashed_words.indptr) == 1).all(), "a word did not hash to one column"
    return hashed_words.indices


def idf(document_frequency: np.ndarray, n_documents: int) -> np.ndarray:
    """ln(N / df): 0 for a word every step has, and for words no step has."""
    df = document_frequency.astype(np.float64)
    weights = np.zeros(len(df), dtype=np.float32)
    seen = df > 0
    weights[seen] = np.log(max(n_documents, 1) / df[seen])
    return weights


def weigh(tf: sp.csr_matrix, weights: np.ndarray) -> sp.csr_matrix:
    """tf x idf, cut to each row's TERMS_PER_STEP heaviest columns, rows L2-normalised."""
    out = tf.copy()
    out.data *= weights[out.indices]
    out.eliminate_zeros()
    out = _heaviest(out, TERMS_PER_STEP)
    norms = np.sqrt(np.asarray(out.multiply(out).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    out.data /= np.repeat(norms, np.diff(out.indptr)).astype(np.float32)
    return out


def _heaviest(matrix: sp.csr_matrix, keep: int) -> sp.csr_matrix:
    """Each row's ``keep`` largest entries (ties: the lower column), vectorised over the rows."""
    lengths = np.diff(matrix.indptr)
    if lengths.size == 0 or lengths.max() <= keep:
        return matrix
    rows = np.repeat(np.arange(matrix.shape[0]), lengths)
    # Sort by row, then weight descending, then column: the first `keep` of each row stay.
    order = np.lexsort((matrix.indices, -matrix.data, rows))
    rank = np.arange(len(order)) - np.repeat(matrix.indptr[:-1], lengths)
    kept = order[rank < keep]
    kept.sort()  # back to row-major order, columns ascending within a row
    new_lengths = np.minimum(lengths, keep)
    indptr = np.concatenate(([0], np.cumsum(new_lengths)))
    return sp.csr_matrix((matrix.data[kept], matrix.indices[kept], indptr), shape=matrix.shape)


def words_of(texts: list[str]) -> dict[int, str]:
    """Each hashed column the words of ``texts`` fall in, named by its most frequent word there
    (the names of a cluster's top terms: hashing keeps no vocabulary)."""
    analyzer = hasher().build_analyzer()
    tally: dict[str, int] = {}
    for text in texts:
        for word in analyzer(text):
            tally[word] = tally.get(word, 0) + 1
    if not tally:
        return {}
    words = sorted(tally)
    columns = word_columns(words)
    named: dict[int, tuple[int, str]] = {}
    for word, column in zip(words, columns):
        best = named.get(int(column))
        if best is None or tally[word] > best[0]:
            named[int(column)] = (tally[word], word)
    return {column: word for column, (_, word) in named.items()}
