"""The default standard panel: every engine detector of the registry x 5 seeds, the default
feature set, on the simulated corpus. What the default store build ends with, so the detector
views have entrants from the first launch."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import registry
from .engine import RescoreResult, score
from .features import DEFAULT_FEATURE_SET, Progress
from .request import slice_corpora

STANDARD_PANEL_SEEDS = 5
STANDARD_PANEL_CORPUS = "maadbench-sim"


def run_standard_panel(root: str | Path, progress: Progress | None = None, *, client: Any = None,
                       seeds: int = STANDARD_PANEL_SEEDS) -> RescoreResult:
    """Every registry detector, 5 seeds, the default feature set, on the simulated corpus.

    In-process unless a Dask client is given. Returns without writing when the store holds no
    simulated corpus.
    """
    counts = slice_corpora(root, {"corpus": [STANDARD_PANEL_CORPUS]})
    if not counts or not int(counts[0]["steps"] or 0):
        return RescoreResult(None, [], [f"no '{STANDARD_PANEL_CORPUS}' corpus in the store; standard panel skipped."], 0.0)
    return score(root, registry.engine_detectors(), {"corpus": [STANDARD_PANEL_CORPUS]}, seeds,
                 DEFAULT_FEATURE_SET, client=client, progress=progress)
