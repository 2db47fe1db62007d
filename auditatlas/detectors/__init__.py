"""Detectors: the registry, step features, group-disjoint splits and the scoring engine.

- ``registry``: one entry per detector (name, family, supervision, estimator factory);
- ``features``: named step feature sets computed in DuckDB from the store;
- ``splits``: seeded splits that never put a room (or run) on both sides;
- ``engine``: fit, score and write prediction sets back to the store, on Dask or in-process;
- ``cross``: the cross-backbone ROC-AUC matrix;
- ``metrics``: ROC-AUC and thresholded metrics with undefined cases said, never 0.5;
- ``cli``: the ``score``, ``cross-backbone`` and ``detectors`` subcommands of ``auditatlas``.

Nothing here imports Streamlit.
"""
