"""The overall comparison of detectors (MAADBench Figure 5) and cost beside accuracy (Figure 10):
per-set metrics from the ``detector_*`` named queries, their means over seeds, the one-tailed
test of each detector against the random baseline, and cost from each set's provenance.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import Query
from .auroc_grid import _interval_of, grid_cells, threshold_text
from .detector_sets import (
    ALPHA,
    DEFAULT_TOP_K,
    METRICS,
    MIN_SEEDS_FOR_TEST,
    SUPERVISION_ORDER,
    check_threshold,
    detectors,
    mean_std,
    prediction_sets,
    random_baseline,
    span,
    step_sets,
)


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else math.nan


def per_set_metrics(overall: pd.DataFrame, sets: pd.DataFrame, top_k: float) -> pd.DataFrame:
    """One row per set: ROC-AUC, F1, accuracy, balanced accuracy, silent and loud recall,
    with the counts each rests on. A metric with nothing to divide by is NaN (undefined).

    ``overall`` is the ``detector_overall`` result (counts, threshold and ROC-AUC per set).
    """
    frame = sets[["set_id", "detector", "seed", "family", "supervision", "origin", "is_random"]].merge(
        overall, on="set_id", how="left")
    for col in ("n_pos", "n_neg", "tp", "fp", "tn", "fn", "silent_pos", "silent_tp", "loud_pos", "loud_tp",
                "unknown_scope_pos", "n_steps", "n_runs"):
        frame[col] = frame[col].fillna(0).astype(int)
    tp, fp, tn, fn = frame["tp"], frame["fp"], frame["tn"], frame["fn"]
    frame["f1"] = [_ratio(2 * a, 2 * a + b + c) for a, b, c in zip(tp, fp, fn)]
    frame["accuracy"] = [_ratio(a + d, a + b + c + d) for a, b, c, d in zip(tp, fp, fn, tn)]
    frame["balanced_accuracy"] = [(_ratio(a, a + c) + _ratio(d, d + b)) / 2 for a, b, c, d in zip(tp, fp, fn, tn)]
    frame["silent_recall"] = [_ratio(a, b) for a, b in zip(frame["silent_tp"], frame["silent_pos"])]
    frame["loud_recall"] = [_ratio(a, b) for a, b in zip(frame["loud_tp"], frame["loud_pos"])]
    frame["threshold_used"] = [threshold_text(o, c, top_k) if n else "" for o, c, n
                               in zip(frame["own_labels"], frame["cut"], frame["n_steps"])]
    return frame


def one_tailed_vs_random(det: Mapping[Any, float], rnd: Mapping[Any, float]) -> dict[str, Any]:
    """Is the detector's ROC-AUC above random's, over seeds? One-tailed (alternative: greater).

    Seeds shared with the random baseline pair the two (same seed, same split):
    ``scipy.stats.ttest_rel`` on the paired per-seed ROC-AUCs. Without enough shared seeds but
    enough replicates on both sides: ``scipy.stats.mannwhitneyu`` (exact, independent samples).
    Otherwise the test is not possible, and the reason says why.
    """
    from scipy import stats

    d = {k: v for k, v in det.items() if v is not None and np.isfinite(v)}
    r = {k: v for k, v in rnd.items() if v is not None and np.isfinite(v)}
    shared = sorted(k for k in set(d) & set(r) if k is not None and not (isinstance(k, float) and math.isnan(k)))
    if len(shared) >= MIN_SEEDS_FOR_TEST:
        a = np.array([d[k] for k in shared])
        b = np.array([r[k] for k in shared])
        if np.allclose(a - b, (a - b)[0]):
            return {"test": "paired t-test (one-tailed)", "n": len(shared), "p": math.nan,
                    "note": "undefined: the per-seed differences do not vary"}
        res = stats.ttest_rel(a, b, alternative="greater")
        return {"test": "paired t-test (one-tailed)", "n": len(shared), "p": float(res.pvalue), "note": ""}
    if len(d) >= MIN_SEEDS_FOR_TEST and len(r) >= MIN_SEEDS_FOR_TEST:
        res = stats.mannwhitneyu(list(d.values()), list(r.values()), alternative="greater", method="exact")
        return {"test": "Mann-Whitney U (one-tailed)", "n": min(len(d), len(r)), "p": float(res.pvalue),
                "note": f"seeds not paired with random ({len(shared)} shared)"}
    return {"test": "", "n": len(d), "p": math.nan,
            "note": f"not possible: {len(d)} defined seed(s) here, {len(r)} for random; needs {MIN_SEEDS_FOR_TEST} on each side"}


def per_detector_metrics(per_set: pd.DataFrame, dets: pd.DataFrame, baseline: str | None) -> pd.DataFrame:
    """Mean ± std over seeds of every metric per detector, the counts behind them, and the
    one-tailed test of its ROC-AUC against the random baseline."""
    rnd = {}
    if baseline is not None:
        b = per_set[per_set["detector"] == baseline]
        rnd = dict(zip(_seed_keys(b), b["auc"]))
    rows = []
    for _, d in dets.iterrows():
        g = per_set[per_set["detector"] == d["detector"]]
        row: dict[str, Any] = {k: d[k] for k in ("detector", "family", "supervision", "origin", "is_random", "n_sets", "seeds")}
        for m in METRICS:
            mean, std, n = mean_std(g[m].tolist())
            row[f"{m}_mean"], row[f"{m}_std"], row[f"{m}_n"] = mean, std, n
        row["test_steps"] = span(g["n_steps"]) if len(g) else "0"
        row["test_runs"] = span(g["n_runs"]) if len(g) else "0"
        row["positives"] = span(g["n_pos"]) if len(g) else "0"
        row["negatives"] = span(g["n_neg"]) if len(g) else "0"
        row["silent_anomalies"] = span(g["silent_pos"]) if len(g) else "0"
        row["loud_anomalies"] = span(g["loud_pos"]) if len(g) else "0"
        row["threshold"] = "; ".join(sorted(set(t for t in g["threshold_used"] if t)))
        # One set's interval, or the span of its seeds' intervals (never an interval of the mean).
        lows, highs = g["auc_low"].astype(float), g["auc_high"].astype(float)
        row["auc_ci_low"], row["auc_ci_high"] = (lows.min(), highs.max()) if lows.notna().any() else (math.nan, math.nan)
        row["auc_ci_of"] = _interval_of(int(lows.notna().sum()), len(g))
        if baseline is None:
            test = {"test": "", "n": 0, "p": math.nan, "note": "no random baseline in this corpus"}
        elif d["detector"] == baseline:
            test = {"test": "", "n": 0, "p": math.nan, "note": "the random baseline itself"}
        else:
            test = one_tailed_vs_random(dict(zip(_seed_keys(g), g["auc"])), rnd)
        row["vs_random_test"], row["vs_random_n"], row["vs_random_p"], row["vs_random_note"] = (
            test["test"], test["n"], test["p"], test["note"])
        row["beats_random"] = bool(np.isfinite(test["p"]) and test["p"] < ALPHA)
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = {s: i for i, s in enumerate(SUPERVISION_ORDER)}
    out["_s"] = out["supervision"].map(lambda s: order.get(s, len(order)))
    return out.sort_values(["is_random", "_s", "supervision", "family", "auc_mean"],
                           ascending=[False, True, True, True, False]).drop(columns="_s").reset_index(drop=True)


def _seed_keys(frame: pd.DataFrame) -> list[Any]:
    """Seeds as pairing keys. A set without a seed, or sharing its seed with another set of the
    same detector (re-scored on two slices), pairs with nothing: it is keyed by its set id."""
    seeds = frame["seed"].tolist()
    counts = pd.Series([s for s in seeds if pd.notna(s)]).value_counts()
    return [int(s) if pd.notna(s) and counts.get(s, 0) == 1 else f"set:{i}" for s, i in zip(seeds, frame["set_id"])]


@dataclass
class Overall:
    corpus: str
    threshold: str
    top_k: float
    sets: pd.DataFrame
    per_set: pd.DataFrame
    per_detector: pd.DataFrame
    baseline: str | None
    notes: list[str] = field(default_factory=list)


def compute_overall(query: Query, corpus: str, slice_: Mapping[str, Any] | None, threshold: str = "own",
                    top_k: float = DEFAULT_TOP_K, sets: pd.DataFrame | None = None) -> Overall:
    threshold, top_k = check_threshold(threshold, top_k)
    sets = step_sets(prediction_sets(query, corpus)) if sets is None else sets
    slice_ = dict(slice_ or {})
    ids = list(sets["set_id"])
    if ids:
        counts = query("detector_overall", {"slice": slice_, "set_ids": ids, "threshold": threshold, "top_k": top_k})
    else:
        counts = pd.DataFrame(columns=["set_id", "own_labels", "cut", "auc"])
    per_set = with_pooled_intervals(per_set_metrics(counts, sets, top_k),
                                    grid_cells(query, slice_, ids, [], [], by_backbone=False, by_action=False))
    dets = detectors(sets)
    baseline = random_baseline(dets)
    notes = []
    if baseline is None and len(dets):
        notes.append("No random prediction set for this corpus: there is no baseline to test against. Re-score with the "
                     "'random' detector to add one (its expected ROC-AUC is 0.5, but a drawn one shows the spread).")
    return Overall(corpus, threshold, top_k, sets, per_set, per_detector_metrics(per_set, dets, baseline), baseline, notes)


def with_pooled_intervals(per_set: pd.DataFrame, pooled: pd.DataFrame) -> pd.DataFrame:
    """Each set's overall ROC-AUC with its 95% interval, clustered by run as the grid's cells
    are (``pooled``: the grid's one cell per set over every backbone and action, whose ROC-AUC
    is the overall one: the same labeled, scored test steps of the slice)."""
    cols = ["set_id", "auc_low", "auc_high", "interval_reason"]
    pooled = pooled[cols] if len(pooled) else pd.DataFrame(columns=cols)
    out = per_set.merge(pooled, on="set_id", how="left")
    out["interval_reason"] = out["interval_reason"].fillna("no scored test step")
    return out


def one_class_note(per_set: pd.DataFrame) -> str | None:
    """One sentence when some sets' labeled test steps in the slice hold one class only (a slice
    without anomalies, or the agreed labels with few verdicts): their ROC-AUC and balanced
    accuracy are undefined, shown blank and never 0.5. None when every set has both classes."""
    scored = per_set[per_set["n_steps"] > 0]
    no_neg, no_pos = int((scored["n_neg"] == 0).sum()), int((scored["n_pos"] == 0).sum())
    if not no_neg and not no_pos:
        return None
    parts = []
    if no_neg:
        parts.append(f"{no_neg} of {len(scored)} prediction set(s) score no normal step of this slice")
    if no_pos:
        parts.append(f"{no_pos} of {len(scored)} prediction set(s) score no anomaly of this slice")
    return "; ".join(parts) + ": their ROC-AUC and balanced accuracy are undefined (blank), never 0.5."


# ----------------------------------------------------------------------------- cost beside accuracy

def cost_table(overall: Overall) -> pd.DataFrame:
    """Per detector: ROC-AUC beside fit + score time and peak memory (means over the sets that
    record them). Blank with a reason where no set of the detector records its provenance."""
    sets = overall.sets
    rows = []
    for _, d in overall.per_detector.iterrows():
        g = sets[sets["detector"] == d["detector"]]
        total = (g["fit_seconds"] + g["score_seconds"]).dropna()
        mem = g["peak_memory_mb"].dropna()
        reason = ""
        if total.empty or mem.empty:
            missing = " and ".join(w for w, empty in (("time", total.empty), ("memory", mem.empty)) if empty)
            if (g["origin"] == "release").all():
                reason = f"released set: no {missing} recorded"
            elif not g["params_ok"].all():
                reason = f"no {missing}: params are not valid JSON"
            else:
                reason = f"no {missing} recorded in params"
        rows.append({
            "detector": d["detector"], "family": d["family"], "supervision": d["supervision"], "origin": d["origin"],
            "auc_mean": d["auc_mean"], "auc_std": d["auc_std"],
            "seconds_mean": float(total.mean()) if len(total) else math.nan,
            "fit_seconds_mean": float(g["fit_seconds"].mean()) if g["fit_seconds"].notna().any() else math.nan,
            "score_seconds_mean": float(g["score_seconds"].mean()) if g["score_seconds"].notna().any() else math.nan,
            "peak_memory_mb_mean": float(mem.mean()) if len(mem) else math.nan,
            "sets_with_provenance": int(min(len(total), len(mem))), "n_sets": int(d["n_sets"]),
            "reason": reason,
        })
    return pd.DataFrame(rows, columns=["detector", "family", "supervision", "origin", "auc_mean", "auc_std",
                                       "seconds_mean", "fit_seconds_mean", "score_seconds_mean",
                                       "peak_memory_mb_mean", "sets_with_provenance", "n_sets", "reason"])
