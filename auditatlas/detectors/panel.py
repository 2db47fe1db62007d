"""The default standard panel: every engine detector of the registry x 5 seeds, the default
feature set, on the simulated corpus. What the default store build ends with, so the detector
views have entrants from the first launch."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UndefinedMetric
from ..progress import Progress
from ..store_parts import table_parts
from . import DEFAULT_FEATURE_SET, registry
from .engine import RescoreResult, score
from .request import slice_corpora
from .splits import run_groups

STANDARD_PANEL_SEEDS = 5
STANDARD_PANEL_CORPUS = "maadbench-sim"


def run_standard_panel(root: str | Path, progress: Progress | None = None, *, client: Any = None,
                       seeds: int = STANDARD_PANEL_SEEDS) -> RescoreResult:
    """Every registry detector, 5 seeds, the default feature set, on the simulated corpus.

    In-process unless a Dask client is given. Returns without writing when the store holds no
    simulated corpus.
    """
    from queries import runner

    counts = slice_corpora(runner(root), {"corpus": [STANDARD_PANEL_CORPUS]})
    if not counts or not int(counts[0]["steps"] or 0):
        return RescoreResult(None, [], [f"no '{STANDARD_PANEL_CORPUS}' corpus in the store; standard panel skipped."], 0.0)
    return score(root, registry.engine_detectors(), {"corpus": [STANDARD_PANEL_CORPUS]}, seeds,
                 DEFAULT_FEATURE_SET, client=client, progress=progress)


def check_staged_corpus(staging: Path) -> None:
    """Raise UndefinedMetric when the staged simulated corpus cannot carry the standard panel.

    The default store writes the corpus, then scores the panel on it; the panel needs two room
    groups (the engine's room-disjoint split holds one out) and anomalous and normal labeled
    steps. Checked on the staged files, before the corpus replaces the one in the store: a
    default store too small for its panel is refused whole, never half built.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    def table(name: str, columns: list[str]):
        data = ds.dataset([str(p) for p in table_parts(staging, name)], format="parquet")
        return data.to_table(columns=columns, filter=ds.field("corpus") == STANDARD_PANEL_CORPUS)

    runs = table("runs", ["run_id", "corpus", "task_id", "room_id", "difficulty"]).to_pandas()
    keys, _ = run_groups(runs)
    groups = len(set(keys))
    if groups < 2:
        raise UndefinedMetric(f"the standard detector panel needs at least 2 room groups to hold one out for "
                              f"testing, and these {len(runs):,} simulated runs make {groups}; use more rooms, "
                              "or `--no-panel`; the store was left unchanged.")
    labels = set(pc.unique(table("steps", ["corpus", "label"]).column("label")).to_pylist())
    if 1 not in labels or 0 not in labels:
        missing = "anomalous" if 1 not in labels else "normal"
        raise UndefinedMetric(f"the standard detector panel needs anomalous and normal labeled steps, and these "
                              f"{len(runs):,} simulated runs hold no {missing} one; use more rooms, or `--no-panel`; "
                              "the store was left unchanged.")
