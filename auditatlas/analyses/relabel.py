"""Labels under the view's label choice for what caches the released ones (the search index, the
step vectors): both are built once per store version from the steps' released labels, so a view
under another choice reads the chosen label of the few steps it shows from the store instead."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..schema import DEFAULT_LABELS
from ..view_state.state_fields import labels_of
from . import Query


def is_released(slice_: Mapping[str, Any] | None) -> bool:
    return labels_of(slice_) == DEFAULT_LABELS


def chosen_labels(query: Query, slice_: Mapping[str, Any] | None, steps: pd.DataFrame) -> pd.Series:
    """The label (1, 0, NaN unlabeled) of each of ``steps`` (columns run_id, step_idx) under the
    slice's label choice, aligned with ``steps``' rows."""
    if steps.empty:
        return pd.Series([], dtype="float64", index=steps.index)
    runs = [str(r) for r in steps["run_id"]]
    found = query("step_labels", {"runs": runs, "steps": [int(s) for s in steps["step_idx"]],
                                  "run_ids": sorted(set(runs)), "labels": labels_of(slice_)})
    by_step = {(str(r), int(s)): (None if pd.isna(v) else float(v))
               for r, s, v in found[["run_id", "step_idx", "label"]].itertuples(index=False)}
    values = [by_step.get((str(r), int(s))) for r, s in zip(steps["run_id"], steps["step_idx"])]
    return pd.Series(values, index=steps.index, dtype="float64")
