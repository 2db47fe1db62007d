"""HBOS through the registry: PyOD's kernel, kept in numba's on-disk cache, same scores."""
from __future__ import annotations

import numpy as np


def test_registry_hbos_scores_as_pyod_and_its_kernel_is_cached():
    import pyod.models.hbos as hbos

    from auditatlas.detectors.registry import get

    rng = np.random.default_rng(7)
    train, test = rng.normal(size=(400, 6)), rng.normal(size=(50, 6))
    ours = get("hbos").make(0).fit(train).decision_function(test)
    assert hbos._calculate_outlier_scores.stats.cache_path  # kept on disk (None for a per-process kernel)
    plain_kernel = hbos._calculate_outlier_scores.py_func  # the same Python function, run uncompiled
    model = hbos.HBOS(n_bins=10, contamination=0.1).fit(train)
    # PyOD sums the per-feature scores and turns the order round (larger = more anomalous).
    expected = -plain_kernel(test, model.bin_edges_, model.hist_, model.n_bins, model.alpha, model.tol).sum(axis=1)
    np.testing.assert_allclose(ours, expected, rtol=1e-9)
