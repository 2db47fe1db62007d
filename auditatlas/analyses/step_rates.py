"""Action success, anomaly rate by capability, and silent-failure rates (specs/analyses.md).

Inputs are the small per-group count tables the named queries return; these functions only
turn counts into rates, keeping every count beside the rate it supports. A rate with no
denominator is undefined (NaN with a reason), never 0.
"""
from __future__ import annotations

import pandas as pd

from .. import actions


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    return (num / den.where(den > 0)).astype(float)


def action_success(counts: pd.DataFrame) -> pd.DataFrame:
    """Long table backbone x action with success rate (%), labeled and unlabeled counts.

    ``counts`` is the output of the ``action_rates`` query.
    """
    out = counts.copy()
    out["action_short"] = out["action"].map(actions.short)
    out["success_pct"] = 100 * _ratio(out["labeled_steps"] - out["anomalies"], out["labeled_steps"])
    out["order"] = out["action"].map(lambda a: actions.sort_key(a)[0])
    return out.sort_values(["backbone", "order", "action"]).drop(columns="order").reset_index(drop=True)


def overall_success(counts: pd.DataFrame) -> pd.DataFrame:
    """Per backbone, success over all labeled steps (Table 3's 'overall' column)."""
    g = counts.groupby("backbone", as_index=False)[["labeled_steps", "anomalies", "unlabeled_steps"]].sum()
    g["success_pct"] = 100 * _ratio(g["labeled_steps"] - g["anomalies"], g["labeled_steps"])
    return g


def anomaly_by_capability(counts: pd.DataFrame) -> pd.DataFrame:
    """Anomaly rate (%) per capability x backbone (MAADBench Figure 3)."""
    frame = counts.assign(capability=counts["action"].map(actions.capability))
    g = frame.groupby(["capability", "backbone"], as_index=False)[["labeled_steps", "anomalies"]].sum()
    g["anomaly_pct"] = 100 * _ratio(g["anomalies"], g["labeled_steps"])
    return g


def silent_failures(counts: pd.DataFrame) -> pd.DataFrame:
    """Silent-failure rates (%) with formatting errors apart (MAADBench Table 4)."""
    out = counts.copy()
    out["silent_pct"] = 100 * _ratio(out["silent_action_failures"], out["action_failures"])
    out["format_silent_pct"] = 100 * _ratio(out["silent_format_errors"], out["format_errors"])
    return out


def no_labeled_steps(summary: pd.DataFrame) -> str:
    """The one sentence the Overview shows when no step of the slice is labeled, naming what its
    corpora do carry (run outcomes, or nothing); ``summary`` is the ``slice_summary`` query."""
    with_outcome = int(summary["runs_with_outcome"].sum()) if "runs_with_outcome" in summary else 0
    carry = ("its corpora carry run-level labels only" if with_outcome
             else "its corpora carry neither step labels nor run outcomes; add labels with `auditatlas ingest labels`")
    return f"No labeled steps in this slice ({carry}), so there is no action success rate to show."
