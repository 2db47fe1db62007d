"""The per-action AUROC grid per backbone (MAADBench Figure 6; definitions in specs/analyses.md)
on whatever step-level prediction sets the store holds for one corpus, released and re-scored
alike. The heavy work (joining every prediction to its step, the rank sums behind every
ROC-AUC, the clustered intervals' sums) runs in DuckDB through the ``grid_*`` named queries;
this module combines the small per-set frames they return: means and spreads over seeds,
undefined cells with their reason, a cell's errors.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import actions
from ..stats import obuchowski_variance, wald_interval
from ..view_state import explorer_url
from . import Query
from .board_intervals import fmt_interval
from .detector_sets import (
    ALL_ACTIONS,
    ALL_BACKBONES,
    DEFAULT_TOP_K,
    check_threshold,
    count_span,
    detectors,
    fmt_mean_std,
    prediction_sets,
    span,
    step_sets,
)


def undefined_reason(pos_max: int, neg_max: int) -> str:
    """Why no seed of a cell has a ROC-AUC (it needs at least one positive and one negative),
    from the most positives and negatives any of its seeds has."""
    if pos_max + neg_max == 0:
        return "no scored labeled test steps"
    if pos_max == 0:
        return "no anomalies (positives) among the test steps"
    if neg_max == 0:
        return "no normal steps (negatives) among the test steps"
    return "every seed lacks positives or negatives"


SHORT_REASONS = {
    "no scored labeled test steps": "no test steps",
    "no anomalies (positives) among the test steps": "no positives",
    "no normal steps (negatives) among the test steps": "no negatives",
    "every seed lacks positives or negatives": "no positives or negatives",
}


def short_reason(reason: str) -> str:
    """The reason of an undefined cell in a few words (the long table keeps the sentence)."""
    return SHORT_REASONS.get(reason, reason)


def aggregate_cells(per_set: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """Per (backbone, action, detector): mean ± std of the per-set ROC-AUCs over seeds, and the
    cell's 95% interval (``_interval_of`` says what it is).

    ``per_set`` is the ``grid_cells`` result. Counts are per seed (a range when the seeds'
    test sets differ). A cell none of whose seeds is defined has ``auc_mean`` NaN and a
    ``reason``; a partly defined cell averages the defined seeds and says how many were not.
    One pandas group-by for every cell (a loop over the cells took most of the grid's time:
    2.4 s for 385 cells of 55 sets under load).
    """
    cols = ["backbone", "action", "detector", "auc_mean", "auc_std", "n_seeds", "n_defined", "n_pos", "n_neg",
            "n_pos_min", "n_neg_min", "reason", "ci_low", "ci_high", "ci_of", "ci_reason"]
    if per_set.empty:
        return pd.DataFrame(columns=cols)
    frame = per_set.merge(sets[["set_id", "detector"]], on="set_id", how="inner")
    if frame.empty:
        return pd.DataFrame(columns=cols)
    frame["auc"] = frame["auc"].astype(float)
    # A per-set frame without intervals (one not from ``grid_cells``) aggregates to none.
    for col, empty in (("auc_low", math.nan), ("auc_high", math.nan), ("interval_reason", "")):
        if col not in frame:
            frame[col] = empty
    frame["first_reason"] = frame["interval_reason"].where(frame["interval_reason"] != "")
    g = frame.groupby(["backbone", "action", "detector"], sort=False).agg(
        auc_mean=("auc", "mean"), auc_std=("auc", "std"), n_seeds=("auc", "size"), n_defined=("auc", "count"),
        n_pos_min=("n_pos", "min"), n_pos_max=("n_pos", "max"), n_neg_min=("n_neg", "min"),
        n_neg_max=("n_neg", "max"), ci_low=("auc_low", "min"), ci_high=("auc_high", "max"),
        n_ci=("auc_low", "count"), first_reason=("first_reason", "first")).reset_index()
    g["n_pos"] = [count_span(lo, hi) for lo, hi in zip(g["n_pos_min"], g["n_pos_max"])]
    g["n_neg"] = [count_span(lo, hi) for lo, hi in zip(g["n_neg_min"], g["n_neg_max"])]
    g["reason"] = [_cell_reason(*v) for v in zip(g["n_defined"], g["n_seeds"], g["n_pos_max"], g["n_neg_max"])]
    g["ci_of"] = [_interval_of(k, n) for k, n in zip(g["n_ci"], g["n_seeds"])]
    g["ci_reason"] = np.where(g["n_ci"] > 0, "", g["first_reason"].fillna("no interval"))
    for col in ("n_seeds", "n_defined", "n_pos_min", "n_neg_min"):
        g[col] = g[col].astype(int)
    return g[cols]


def _cell_reason(n_defined: int, n_seeds: int, pos_max: int, neg_max: int) -> str:
    """``undefined_reason`` from a cell's counts, or the partly defined cell's note."""
    if n_defined == 0:
        return undefined_reason(pos_max, neg_max)
    if n_defined < n_seeds:
        return f"{n_seeds - n_defined} of {n_seeds} seeds undefined (no positives or no negatives); mean of the rest"
    return ""


def _interval_of(n_ci: int, n_seeds: int) -> str:
    """What a cell's interval is: its one set's, or the span of its seeds' intervals (the lowest
    low to the highest high). Not the mean of the seeds' bounds, which would read as an interval
    of the mean: the seeds score overlapping runs, so their errors are correlated and the mean's
    interval does not follow from theirs."""
    if n_ci == 0:
        return ""
    of = "one set" if n_ci == 1 else f"span of {n_ci} seeds' intervals"
    return of + (f" ({n_ci} of {n_seeds} seeds have one)" if n_ci < n_seeds else "")


MEAN_COLUMNS = ["backbone", "key", "mean", "n_cells", "n_cells_with_interval", "n_runs", "se", "ci_low", "ci_high",
                "ci_reason"]


def grid_means(query: Query, slice_: Mapping[str, Any] | None, sets: pd.DataFrame, backbones: Sequence[str],
               actions_: Sequence[str], by_backbone: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bottom row (per backbone and detector, the mean over its defined cells) and right column
    (per backbone and action, the mean over the detectors' defined cells; a cell is the mean
    over its defined seeds), each with how many cells it averages and its 95% interval.

    The interval is clustered by run like a cell's, from each run's influence on every cell of
    the mean (``queries/sql/_grid_mean_spread.sql``): the cells share runs, so their errors are
    correlated and the mean's interval does not follow from theirs.
    """
    backbones = sorted(set(backbones)) if by_backbone else [ALL_BACKBONES]
    actions_ = sorted(set(actions_))
    if sets.empty or not backbones or not actions_:
        return (pd.DataFrame(columns=MEAN_COLUMNS).rename(columns={"key": "detector"}),
                pd.DataFrame(columns=MEAN_COLUMNS).rename(columns={"key": "action"}))
    frame = query("grid_means", {"slice": dict(slice_ or {}), "set_ids": list(sets["set_id"]),
                                 "set_detectors": list(sets["detector"]), "backbones": backbones,
                                 "actions": actions_, "by_backbone": by_backbone, "by_action": True})
    frame["key"] = np.where(frame["mean_of"] == "detector", frame["detector"], frame["action"])
    frame["se"] = np.sqrt(frame["var"].astype(float))
    low, high = wald_interval(frame["mean"].astype(float), frame["se"])
    frame["ci_reason"] = [mean_interval_reason(*v) for v in
                          zip(frame["n_cells"], frame["n_cells_with_interval"], frame["se"])]
    shown = (frame["ci_reason"] == "").to_numpy()
    frame["ci_low"], frame["ci_high"] = np.where(shown, low, np.nan), np.where(shown, high, np.nan)
    by_detector, by_action = (frame[frame["mean_of"] == kind][MEAN_COLUMNS].rename(columns={"key": kind})
                              .reset_index(drop=True) for kind in ("detector", "action"))
    return by_detector, by_action


def mean_interval_reason(n_cells: int, n_with_interval: int, se: float) -> str:
    """Why a grid mean has no interval: a cell of it has too few runs for one of its own (the
    mean would lean on a spread that cell cannot estimate), or the mean rests on one run."""
    if n_with_interval < n_cells:
        return f"{n_cells - n_with_interval} of its {n_cells} cells have too few runs for an interval"
    if not np.isfinite(se):
        return "too few runs for an interval"
    return ""


GRID_CELL_COLUMNS = ["set_id", "backbone", "action", "n_pos", "n_neg", "auc", "n_runs", "runs_pos", "runs_neg",
                     "auc_se", "auc_low", "auc_high", "interval_reason"]
# How a grid cell's 95% interval is made, in the words the page, its hover and the CSV use.
INTERVAL_METHOD = "clustered by run (Obuchowski 1997)"
INTERVAL_CAPTION = (f"95% interval: {INTERVAL_METHOD}: a run's steps count as one draw, since they are not "
                    "independent (Wald, clipped to [0, 1]). A cell of one set shows that set's interval; a cell of "
                    "several seeds shows the span of its seeds' own intervals (the lowest low to the highest high), "
                    "not an interval of their mean, beside the spread over seeds. A mean's interval (the bottom row "
                    "and the right column) is clustered by run too, from each run's influence on every cell of the "
                    "mean, since its cells share runs; it leaves out the variation between seeds.")
MEAN_INTERVAL_METHOD = "clustered by run (each run's influence on the mean's cells)"

OVERALL_INTERVAL_CAPTION = (f"ROC-AUC 95%: each set's interval {INTERVAL_METHOD}, as the grid's cells (its steps of "
                            "every backbone and action in the slice); a detector of several sets (seeds) shows the "
                            "span of their intervals, not an interval of their mean ('interval of' says which). "
                            "The decision metrics carry the spread over seeds only.")


def with_intervals(per_set: pd.DataFrame) -> pd.DataFrame:
    """Each set's cell with its standard error and 95% interval, clustered by run.

    The ``grid_cells`` query returns Obuchowski's sums per cell (q10, q01, q11 and the runs
    with positives, with negatives, in all); ``stats.obuchowski_variance`` turns them into
    Var(AUC). Where there is no interval the reason says why, in a few words.
    """
    frame = per_set.copy()
    if frame.empty:
        for col in ("auc_se", "auc_low", "auc_high"):
            frame[col] = pd.Series(dtype=float)
        frame["interval_reason"] = pd.Series(dtype=str)
        return frame
    var = obuchowski_variance(frame["auc"].astype(float), frame["n_pos"], frame["n_neg"], frame["q10"].astype(float),
                              frame["q01"].astype(float), frame["q11"].astype(float), frame["runs_pos"],
                              frame["runs_neg"], frame["n_runs"])
    frame["auc_se"] = np.sqrt(var)
    low, high = wald_interval(frame["auc"].astype(float), frame["auc_se"])
    defined = np.isfinite(frame["auc_se"].to_numpy())
    frame["auc_low"], frame["auc_high"] = np.where(defined, low, np.nan), np.where(defined, high, np.nan)
    frame["interval_reason"] = [interval_reason(a, p, n) for a, p, n
                                in zip(frame["auc"].astype(float), frame["runs_pos"], frame["runs_neg"])]
    return frame.drop(columns=["q10", "q01", "q11"])


def interval_reason(auc: float, runs_pos: int, runs_neg: int) -> str:
    """Why a cell has no interval: no ROC-AUC at all, or too few runs to estimate a spread."""
    if not np.isfinite(auc):
        return "no ROC-AUC (one class only)"
    if runs_pos < 2 or runs_neg < 2:
        return f"too few runs: {int(runs_pos)} with positives, {int(runs_neg)} with negatives (needs 2 each)"
    return ""


def grid_cells(query: Query, slice_: Mapping[str, Any] | None, set_ids: Sequence[str], backbones: Sequence[str],
               actions_: Sequence[str], by_backbone: bool, by_action: bool = True) -> pd.DataFrame:
    """One ROC-AUC per (backbone, action, set) with its run-clustered 95% interval: the
    ``grid_cells`` query, then ``with_intervals``.

    ``backbones`` and ``actions_`` are the labels the cells may take (the query keys cells by
    their positions in these lists); pooled labels replace them when a dimension is pooled.
    """
    backbones = sorted(set(backbones)) if by_backbone else [ALL_BACKBONES]
    actions_ = sorted(set(actions_)) if by_action else [ALL_ACTIONS]
    if not set_ids or not backbones or not actions_:
        return pd.DataFrame(columns=GRID_CELL_COLUMNS)
    return with_intervals(query("grid_cells", {"slice": dict(slice_ or {}), "set_ids": list(set_ids),
                                               "backbones": backbones, "actions": actions_,
                                               "by_backbone": by_backbone, "by_action": by_action}))


@dataclass
class Grid:
    """The per-action AUROC grid of one corpus, per backbone (or pooled)."""

    corpus: str
    by_backbone: bool
    sets: pd.DataFrame  # the step-level sets behind it
    detectors: pd.DataFrame
    cells: pd.DataFrame  # long form, aggregate_cells
    per_set: pd.DataFrame  # grid_cells result (one ROC-AUC per set and cell)
    actions: pd.DataFrame  # grid_actions: success rate per action (the row labels)
    detector_means: pd.DataFrame
    action_means: pd.DataFrame
    coverage: pd.DataFrame  # detector_coverage: labeled test steps and runs per set
    notes: list[str] = field(default_factory=list)

    def rests_on(self) -> str:
        """'N labeled test steps of M runs' (a range when the sets' test splits differ)."""
        if self.coverage.empty:
            return "no labeled test steps"
        return (f"{span(self.coverage['n_steps'])} labeled test steps ({span(self.coverage['n_pos'])} anomalies) "
                f"of {span(self.coverage['n_runs'])} runs per prediction set")

    @property
    def backbones(self) -> list[str]:
        return sorted(self.actions["backbone"].unique().tolist()) if not self.actions.empty else []


def compute_grid(query: Query, corpus: str, slice_: Mapping[str, Any] | None, by_backbone: bool,
                 sets: pd.DataFrame | None = None) -> Grid:
    sets = step_sets(prediction_sets(query, corpus)) if sets is None else sets
    slice_ = dict(slice_ or {})
    acts = query("grid_actions", {"slice": slice_, "target_corpus": corpus, "by_backbone": by_backbone})
    acts["action_short"] = acts["action"].map(actions.short)
    acts["order"] = acts["action"].map(lambda a: actions.sort_key(a)[0])
    acts = acts.sort_values(["backbone", "order", "action"]).drop(columns="order").reset_index(drop=True)
    per_set = grid_cells(query, slice_, list(sets["set_id"]), acts["backbone"].unique().tolist(),
                         acts["action"].unique().tolist(), by_backbone)
    cells = aggregate_cells(per_set, sets)
    det_means, act_means = grid_means(query, slice_, sets, acts["backbone"].unique().tolist(),
                                      acts["action"].unique().tolist(), by_backbone)
    coverage = (query("detector_coverage", {"slice": slice_, "set_ids": list(sets["set_id"])}) if len(sets)
                else pd.DataFrame(columns=["set_id", "n_steps", "n_pos", "n_runs"]))
    notes = []
    unlabeled_only = acts[acts["labeled_steps"] == 0]
    if len(unlabeled_only):
        notes.append(f"{len(unlabeled_only)} action row(s) have no labeled steps in this slice; no ROC-AUC can rest on them.")
    return Grid(corpus, by_backbone, sets, detectors(sets), cells, per_set, acts, det_means, act_means, coverage, notes)


def step_set_corpora(query: Query, slice_: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The corpora the Detectors page compares (those of the slice with step-level prediction
    sets), in its order: the first is its default."""
    corpora = query("detector_corpora")
    if (slice_ or {}).get("corpus"):
        corpora = corpora[corpora["corpus"].isin(slice_["corpus"])]
    return corpora[corpora["step_sets"] > 0]


def keep_default_grid(query: Query) -> None:
    """Compute the Detectors page's default grid through ``query`` (which keeps what it is told
    to keep, ``queries.kept.KEPT_QUERIES``): the page's first corpus with step-level sets, the
    whole store, per backbone. Nothing when no corpus has such sets."""
    with_steps = step_set_corpora(query)
    if with_steps.empty:
        return
    corpus = str(with_steps["corpus"].iloc[0])
    sets = step_sets(prediction_sets(query, corpus))
    if len(sets):
        compute_grid(query, corpus, {}, by_backbone=True, sets=sets)


def action_label(action: str) -> str:
    short = actions.short(action)
    return action if short == action else f"{short} · {action}"


def wide_grid(grid: Grid, backbone: str, detail: bool = True) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """The grid of one backbone as a table a person reads: rows = actions (with success rate),
    columns = detectors, cells 'mean ± std [95% low, high] · n+ / n−' (``INTERVAL_CAPTION``
    says what the interval is) or '— reason'; a bottom row of means per detector and a right
    column of means per action.

    ``detail=False``: the number alone, 'mean ± std' (and '(1 of 2 sets)' when some seeds have
    no value), or '— reason', for the table on screen; its interval and counts are the long
    table's and the CSV's, where a reader who wants them looks.

    Returns the text table, a numeric table of the same shape (for colouring) and the map from
    column title to detector name.
    """
    acts = grid.actions[grid.actions["backbone"] == backbone]
    cells = grid.cells[grid.cells["backbone"] == backbone].set_index(["action", "detector"])
    det_means = grid.detector_means[grid.detector_means["backbone"] == backbone].set_index("detector")
    act_means = grid.action_means[grid.action_means["backbone"] == backbone].set_index("action")
    titles = {}
    for _, d in grid.detectors.iterrows():
        n = d["n_sets"]
        titles[f"{d['detector']} ({n} set{'s' if n != 1 else ''})"] = d["detector"]
    text_rows, num_rows = [], []
    for _, a in acts.iterrows():
        rate = a["success_rate"]
        text = {"action": action_label(a["action"]),
                "success rate": "" if pd.isna(rate) else f"{100 * rate:.1f}%",
                "labeled steps": f"{int(a['labeled_steps']):,}"}
        num = {"action": a["action"], "success rate": np.nan, "labeled steps": np.nan}
        for title, det in titles.items():
            key = (a["action"], det)
            if key in cells.index:
                c = cells.loc[key]
                if np.isfinite(c["auc_mean"]):
                    partial = f" ({c['n_defined']} of {c['n_seeds']} sets)" if c["n_defined"] < c["n_seeds"] else ""
                    ci = fmt_interval(c["ci_low"], c["ci_high"]) or "[no interval]"
                    text[title] = (f"{fmt_mean_std(c['auc_mean'], c['auc_std'])} {ci}{partial} · "
                                   f"{c['n_pos']}+ / {c['n_neg']}−") if detail else \
                        f"{fmt_mean_std(c['auc_mean'], c['auc_std'])}{partial}"
                    num[title] = c["auc_mean"]
                else:
                    counts = f" ({c['n_pos']}+ / {c['n_neg']}−)" if detail else ""
                    text[title] = f"— {short_reason(c['reason'])}{counts}"
                    num[title] = np.nan
            else:
                text[title] = "— no scored test steps"
                num[title] = np.nan
        text["mean over detectors"], num["mean over detectors"] = _mean_text(act_means, a["action"], "cell", detail)
        text_rows.append(text)
        num_rows.append(num)
    bottom = {"action": "mean over actions", "success rate": "", "labeled steps": ""}
    bottom_num = {"action": ALL_ACTIONS, "success rate": np.nan, "labeled steps": np.nan}
    for title, det in titles.items():
        bottom[title], bottom_num[title] = _mean_text(det_means, det, "action", detail)
    bottom["mean over detectors"] = ""
    bottom_num["mean over detectors"] = np.nan
    text_rows.append(bottom)
    num_rows.append(bottom_num)
    columns = ["action", "success rate", "labeled steps", *titles, "mean over detectors"]
    return pd.DataFrame(text_rows, columns=columns), pd.DataFrame(num_rows, columns=columns), titles


def _mean_text(means: pd.DataFrame, key: str, unit: str, detail: bool = True) -> tuple[str, float]:
    """A grid mean as the table shows it, '0.712 [0.690, 0.734] (9 actions)' ('0.712 (9
    actions)' without ``detail``), and its value."""
    if key not in means.index or not np.isfinite(float(means.at[key, "mean"])):
        return "— no defined cell", np.nan
    row = means.loc[key]
    n = int(row["n_cells"])
    ci = (fmt_interval(row["ci_low"], row["ci_high"]) or "[no interval]") + " " if detail else ""
    return f"{float(row['mean']):.3f} {ci}({n} {unit}{'s' if n != 1 else ''})", float(row["mean"])


def cell_errors(query: Query, set_id: str, backbone: str, action: str, slice_: Mapping[str, Any] | None,
                threshold: str = "own", top_k: float = DEFAULT_TOP_K, limit: int = 20) -> pd.DataFrame:
    """A cell's highest-scored false positives and lowest-scored false negatives for one set,
    each with its explorer link. ``threshold_used`` says how the set decided."""
    threshold, top_k = check_threshold(threshold, top_k)
    frame = query("grid_errors", {"slice": dict(slice_ or {}), "set_id": set_id, "cell_backbone": backbone,
                                  "cell_action": action, "threshold": threshold, "top_k": top_k, "limit": int(limit)})
    steps = query("error_steps", {"run_ids": sorted(set(frame["run_id"]))})
    ids = frame[["run_id", "step_idx"]].merge(steps, on=["run_id", "step_idx"], how="left")
    frame.insert(frame.columns.get_loc("step_idx") + 1, "step_id", ids["step_id"].to_numpy())
    frame.insert(frame.columns.get_loc("step_id") + 1, "agent", ids["agent"].to_numpy())
    # Each link carries the rule that made the step an error here (the set's own decisions, or
    # the score cut of its top share), so the Explorer shows the same verdict on it.
    frame["explorer"] = [explorer_url(r, s, set_id, **_explorer_rule(own, cut))
                         for r, s, own, cut in zip(frame["run_id"], frame["step_idx"], frame["own_labels"], frame["cut"])]
    frame["threshold_used"] = [threshold_text(own, cut, top_k) for own, cut in zip(frame["own_labels"], frame["cut"])]
    return frame


def _explorer_rule(own_labels: Any, cut: Any) -> dict[str, Any]:
    if bool(own_labels):
        return {"rule": "own"}
    if cut is None or (isinstance(cut, float) and math.isnan(cut)):
        return {}
    return {"threshold": float(cut)}


def threshold_text(own_labels: Any, cut: Any, top_k: float) -> str:
    if bool(own_labels):
        return "its own pred_label"
    if cut is None or (isinstance(cut, float) and math.isnan(cut)):
        return f"top {top_k:g}% (no steps)"
    return f"top {top_k:g}% (score ≥ {cut:.4g})"


