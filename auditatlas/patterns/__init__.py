"""Patterns: "steps like this one" and failure clusters, over step vectors kept per store version.

Is this failure a pattern? Two answers, both restricted to the sidebar's slice:

- :func:`similar.similar_steps`: the k steps of the slice most like one step, each with its run,
  backbone, label and every prediction set's score for it, plus a summary line;
- :func:`clusters.failure_clusters`: the slice's anomalous steps (labeled anomalies; for a slice
  without labels, the steps most sets flag) grouped by MiniBatchKMeans, each cluster with its
  size, top terms, share per backbone and action and three example steps.

The vectors (``vectors.py``, built by ``build.py``)
    One row per step of the store, in (run_id, step_idx) order. Text: the words of the step's
    input and output hashed into ``text.N_FEATURES`` columns (scikit-learn ``HashingVectorizer``),
    weighted by sublinear tf times idf, cut to each step's ``text.TERMS_PER_STEP`` heaviest words
    and L2-normalised. Hashing and not ``TfidfVectorizer``: a vocabulary has to be fitted on the
    whole corpus in memory first (9.3M steps at a million rooms), hashing needs no fit, so the
    build is one bounded pass over batches of runs; the document frequencies are counted on the
    way and the idf applied to the batches kept on disk. Features: the action and agent codes,
    the position in the run and the size (log tokens) and duration, the same numbers the
    detectors compute (``queries/sql/_step_feature_values.sql``).

The similarity (one number in [0, 1], the same for neighbours and clusters)
    ``0.6 * cosine(text) + 0.2 * same action + 0.1 * same agent + 0.05 * (1 - |position gap|)
    + 0.05 * exp(-|size gap|)`` (``similar.WEIGHTS``). Cosine on L2-normalised TF-IDF because
    trace text is templated: the words a step shares with another, weighted by their rarity,
    say what kind of step it is, and idf = ln(N / df) gives a word every step has (``the``) no
    weight at all. The feature terms tell apart steps of the same words in another role. Words
    only, no numbers or ids (``room_0042``, ``note_p1``): those say which run a step is from,
    not what kind of step it is.

Why exact top-k by sparse products and not sklearn ``NearestNeighbors``
    A brute-force ``NearestNeighbors`` fit holds the whole matrix in memory and computes every
    distance with every column; an ANN index (hnswlib, pynndescent, annoy) costs minutes to
    build at 9.3M steps, holds its graph in memory beside the app and is approximate, while
    the exact answer below is cheaper. The text part is read from an inverted index (each
    column's steps, ``csc``): only the postings of the anchor's own ``TERMS_PER_STEP`` words are
    touched, and since every step keeps only its heaviest words, the postings of common words
    are short; their loop is compiled (``kernels.py``). Every step's features are then scored
    in cache-sized blocks, keeping the k best so far (``similar.nearest``): linear in the
    steps, but a few passes over small arrays, not one 9.3M-row temporary per term. The slice
    is a mask over runs (a look-up in each column's few names); ties go to the lower row.
    Memory: 4 bytes per step (the text cosines) and a few blocks, whatever k and the slice.

No Streamlit here, and no store path: the vectors are built from a ``Query`` function and live
in a folder the caller names (``build.vectors_home``: next to the derived tables, keyed by the
store's manifest, built into scratch and renamed into place).
"""

# How many failure clusters and similar steps, declared here (a light module) for the page's link
# and the CLI.
DEFAULT_CLUSTERS = 8
MAX_CLUSTERS = 50  # beyond this the table of clusters stops being readable
DEFAULT_K = 20
MAX_K = 200

