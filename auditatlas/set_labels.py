"""A short label per prediction set, for pickers and tables: what made it, not its id.

A set id is a key (``rescore-d5102f32-iforest-s0``, a release's file stem): the label says the
method, the judge's protocol and model when it has them, and the seed, e.g. ``iforest · seed 0``
or ``llm-judge · all-at-once · gpt-5.5``. Two sets that would read the same (two re-scorings of
one detector on other features) keep their ids beside the label.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .schema import missing

SEPARATOR = " · "


def _given(value: Any) -> bool:
    return not missing(value) and str(value).strip() != ""


def set_label(row: Mapping[str, Any]) -> str:
    """The label of one set (a ``prediction_sets`` row: method, protocol, model, seed)."""
    parts = [str(row[k]) for k in ("method", "protocol", "model") if _given(row.get(k))]
    if _given(row.get("seed")):
        parts.append(f"seed {int(row['seed'])}")
    return SEPARATOR.join(parts) or str(row.get("set_id", ""))


def set_labels(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Set id -> label for ``rows``; a label two sets share gets each one's id after it."""
    rows = list(rows)
    labels = {str(r["set_id"]): set_label(r) for r in rows}
    shared = {label for label, n in Counter(labels.values()).items() if n > 1}
    return {set_id: f"{label} ({set_id})" if label in shared else label for set_id, label in labels.items()}
