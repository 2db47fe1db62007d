"""Detectors: the registry, step features, group-disjoint splits and the scoring engine.

- ``registry``: one entry per detector (name, family, supervision, estimator factory, and
  the rows it trains on by its supervision: ``Detector.training_rows``);
- ``features``: named step feature sets computed in DuckDB from the store;
- ``splits``: seeded splits that never put a room (or run) on both sides;
- ``request``: a scoring request checked up front (detectors, seeds, scorable corpora);
- ``jobs``: what a scoring job is (a unit's fit job and score jobs), measured by ``meter``;
- ``executors``: where jobs run, in this process or on Dask (the engine and ``cross`` share them);
- ``provenance``: the ``params`` a re-scored prediction set records;
- ``prediction_sets``: a scored unit as store rows, and the write of one call's sets;
- ``engine``: fit, score and write prediction sets back to the store;
- ``panel``: the default standard panel (every engine detector x 5 seeds);
- ``cross``: the cross-backbone ROC-AUC matrix;
- ``metrics``: ROC-AUC (``auditatlas.stats.roc_auc``) and thresholded metrics with undefined
  cases said, never 0.5;
- ``stale``: which re-scored sets a re-ingest invalidates;
- the ``score``, ``cross-backbone`` and ``detectors`` subcommands of ``auditatlas`` are declared in
  ``auditatlas/commands/detector_commands.py``.

Nothing here imports Streamlit.
"""

# The feature sets' names and meanings, declared here (a light module) for the page's link and the
# CLI; ``features`` computes them.
FEATURE_SETS: dict[str, str] = {
    "structural": "position, action and agent one-hots, tokens, duration, confidence, tool call, dependency degree and span",
    "structural+text": "structural plus hashed word 1-2-grams of the step prompt and output",
}
DEFAULT_FEATURE_SET = "structural"
