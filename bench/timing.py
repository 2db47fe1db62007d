"""Cold and warm timing of one call, shared by the benchmark scripts (run as ``python bench/X.py``)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def cold_warm(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, list[float]]:
    """``fn``'s result, its first call's seconds, and the seconds of ``repeat`` calls after it."""
    t0 = time.perf_counter()
    result = fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return result, cold, warm
