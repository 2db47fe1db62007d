"""Anomaly propagation: heatmap, chains, recall by chain role, failure modes, silent failures.

Definitions are shared/specs/analyses.md (MAADBench Figures 4, 7, 8, 11; Table 4). Every
slice-wide number is computed in DuckDB by a ``propagation_*`` named query; the functions of the
first section below run those queries with their bound parameters through the ``query`` function
they are handed (``components.cached.query`` in the app, ``queries.runner(root)`` in the CLI,
tests and benchmarks), so every caller asks for exactly the same thing; the rest turn their small
aggregated results into the tables a page draws. It imports no Streamlit.

A *scope* is where an error can propagate: the same run and puzzle, or the run for corpora
without puzzles. A *chain* is the sorted failed steps of one scope when there are at least two
(``auditatlas.chains`` states the rule; the store writer applies it once, and the queries read
each step's stored ``chain_role`` and ``chain_length``).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import actions
from ..chains import DOWN, MID, ORIGIN, ROLES
from ..view_state import explorer_url
from ..view_state.state_fields import copy_shared
from . import Query

Slice = Mapping[str, Any] | None
PAGE_SIZE = 50


# ---------------------------------------------------------------------------------------------
# The named queries, with their parameters


def _slice(slice_: Slice) -> dict[str, Any]:
    return copy_shared(slice_)


def chain_counts(query: Query, slice_: Slice) -> pd.DataFrame:
    """Runs and chains per corpus of the slice (``propagation_corpora``)."""
    return query("propagation_corpora", {"slice": _slice(slice_)})


def step_counts(query: Query, slice_: Slice) -> pd.DataFrame:
    """Steps and failed steps per corpus, backbone, action and label source (``propagation_sources``)."""
    return query("propagation_sources", {"slice": _slice(slice_)})


def followed_counts(query: Query, slice_: Slice) -> pd.DataFrame:
    """The heatmap's numerators per corpus, backbone and action pair (``propagation_heatmap``)."""
    return query("propagation_heatmap", {"slice": _slice(slice_)})


def possible_pairs(query: Query) -> pd.DataFrame:
    """Store-wide (not sliced): which action pairs can follow one another at all."""
    return query("propagation_possible", {})


def cell_chains(query: Query, slice_: Slice, backbone: str, src_action: str, later_action: str,
                page: int = 1, page_size: int = PAGE_SIZE) -> pd.DataFrame:
    """One page of the chains behind a heatmap cell, with the total before paging."""
    return query("propagation_cell_chains", {
        "slice": _slice(slice_), "cell_backbone": backbone, "src_action": src_action,
        "later_action": later_action, **_paging(page, page_size),
    })


def chains(query: Query, slice_: Slice, origin_actions: Iterable[str] = (), min_length: int | None = None,
           max_length: int | None = None, page: int = 1, page_size: int = PAGE_SIZE) -> pd.DataFrame:
    """One page of the slice's chains (optionally by origin action and length), with the total."""
    return query("propagation_chains", {
        "slice": _slice(slice_), "origin_actions": [str(a) for a in origin_actions],
        "min_length": None if min_length is None else int(min_length),
        "max_length": None if max_length is None else int(max_length),
        **_paging(page, page_size),
    })


def chain_lengths(query: Query, slice_: Slice) -> pd.DataFrame:
    return query("propagation_chain_lengths", {"slice": _slice(slice_)})


def step_sets(query: Query, slice_: Slice) -> pd.DataFrame:
    return query("propagation_step_sets", {"slice": _slice(slice_)})


def role_recall_counts(query: Query, slice_: Slice, top_k: float | None = None) -> pd.DataFrame:
    """Scored and flagged steps per (set, role, action), flagged by each set's own labels
    (``top_k`` None) or by a top-k% cut (0 < k <= 100): the input of :func:`role_recall`."""
    if top_k is None:
        return query("propagation_role_recall_labels", {"slice": _slice(slice_)})
    top_k = float(top_k)
    if not 0 < top_k <= 100:
        raise ValueError(f"top-k% must be in (0, 100], got {top_k}")
    return query("propagation_role_recall_topk", {"slice": _slice(slice_), "top_k": top_k})


def failure_mode_counts(query: Query, slice_: Slice) -> pd.DataFrame:
    """Failed steps per backbone, failure mode, cascade flag and error code."""
    return query("propagation_failure_modes", {"slice": _slice(slice_)})


def silent_counts(query: Query, slice_: Slice) -> pd.DataFrame:
    """Action failures and formatting errors per backbone and action, silent ones apart."""
    return query("propagation_silent", {"slice": _slice(slice_)})


def _paging(page: int, page_size: int) -> dict[str, int]:
    page, page_size = max(int(page), 1), max(int(page_size), 1)
    return {"limit": page_size, "offset": (page - 1) * page_size}


# ---------------------------------------------------------------------------------------------
# Which corpora can form chains


@dataclass(frozen=True)
class ChainStatus:
    """Corpora of the slice that form chains, and why the others do not."""

    chain_corpora: list[str]
    reasons: dict[str, str]

    @property
    def has_chains(self) -> bool:
        return bool(self.chain_corpora)


def corpora(sources: pd.DataFrame, chain_counts: pd.DataFrame) -> pd.DataFrame:
    """Per corpus of the slice: runs, steps, labeled and failed steps, label sources, chains.

    ``sources`` is ``propagation_sources`` and ``chain_counts`` is ``propagation_corpora``
    (runs and failures per scope); the steps are scanned once, by the first.
    """
    cols = ["corpus", "runs", "runs_with_outcome", "steps", "labeled_steps", "failed_steps", "scopes_with_failures", "chains",
            "max_failures_in_scope", "label_sources"]
    if chain_counts.empty:
        return pd.DataFrame(columns=cols)
    steps = sources.groupby("corpus", as_index=False)[["steps", "labeled_steps", "failed_steps"]].sum()
    labels = (sources.dropna(subset=["label_source"]).groupby("corpus")["label_source"]
              .agg(lambda v: ", ".join(sorted(set(v)))).rename("label_sources").reset_index())
    out = chain_counts.merge(steps, on="corpus", how="left").merge(labels, on="corpus", how="left")
    for c in ("steps", "labeled_steps", "failed_steps"):
        out[c] = out[c].fillna(0).astype(int)
    out["label_sources"] = out["label_sources"].fillna("")
    return out[cols]


def load_corpora(query: Query, slice_: Slice) -> pd.DataFrame:
    """:func:`corpora` for a slice, both of its queries run through ``query``."""
    return corpora(step_counts(query, slice_), chain_counts(query, slice_))


def chain_status(corpora: pd.DataFrame) -> ChainStatus:
    """Read :func:`corpora` rows: which corpora have a chain, and a reason for the rest."""
    chain_corpora, reasons = [], {}
    for row in corpora.itertuples(index=False):
        if row.chains > 0:
            chain_corpora.append(row.corpus)
        elif row.labeled_steps == 0:
            reasons[row.corpus] = ("its steps carry no labels (run outcome only)" if getattr(row, "runs_with_outcome", 1)
                                   else "its steps carry no labels and its runs no outcome")
        elif row.failed_steps == 0:
            reasons[row.corpus] = "none of its steps in this slice failed"
        elif row.max_failures_in_scope <= 1:
            reasons[row.corpus] = (f"no scope holds more than one failed step (labels: {row.label_sources}); "
                                   "a single decisive step per run cannot form a chain")
        else:
            reasons[row.corpus] = "no scope of this slice holds two or more failed steps"
    return ChainStatus(chain_corpora, reasons)


# ---------------------------------------------------------------------------------------------
# The heatmap


def action_order(values: Iterable[str]) -> list[str]:
    """Actions in pipeline order (MAADBench), then any other action by name."""
    return sorted(set(values), key=actions.sort_key)


def action_label(action: str) -> str:
    """The short paper name of a MAADBench action (SC, AD, ...), else the action itself."""
    return actions.short(action)


def heatmap(sources: pd.DataFrame, followed: pd.DataFrame, possible: pd.DataFrame) -> pd.DataFrame:
    """One row per (backbone, source action, later action) of the slice.

    ``sources`` is ``propagation_sources`` (steps and failed steps per corpus, backbone and
    action), ``followed`` is ``propagation_heatmap`` (the numerators, per corpus), ``possible``
    is ``propagation_possible`` (store-wide pairs). Only corpora with a chain in the slice are
    drawn (exactly those with a numerator row): a corpus of single failures would add rows of
    zeros. Columns: ``failed`` (# failed source steps, the row's denominator), ``followed``,
    ``rate`` (NaN where the source action never failed), ``possible``. Rows and columns are the
    actions present in the slice, the same for every backbone, so the per-backbone maps line up.
    """
    columns = ["backbone", "src_action", "later_action", "failed", "followed", "rate", "possible"]
    sources = sources[sources["corpus"].isin(set(followed["corpus"]))]
    if sources.empty:
        return pd.DataFrame(columns=columns)
    sources = sources.groupby(["backbone", "action"], as_index=False)["failed_steps"].sum()
    followed = followed.groupby(["backbone", "src_action", "later_action"], as_index=False)["followed"].sum()
    backbones = sorted(sources["backbone"].unique())
    acts = action_order(sources["action"])
    grid = pd.MultiIndex.from_product([backbones, acts, acts], names=columns[:3]).to_frame(index=False)
    failed = sources.rename(columns={"action": "src_action", "failed_steps": "failed"})
    out = grid.merge(failed, on=["backbone", "src_action"], how="left")
    out = out.merge(followed, on=["backbone", "src_action", "later_action"], how="left")
    out["failed"] = out["failed"].fillna(0).astype(int)
    out["followed"] = out["followed"].fillna(0).astype(int)
    out["rate"] = (out["followed"] / out["failed"].where(out["failed"] > 0)).astype(float)
    pairs = set(zip(possible["src_action"], possible["later_action"]))
    out["possible"] = [(s, a) in pairs for s, a in zip(out["src_action"], out["later_action"])]
    return out[columns]


def load_heatmap(query: Query, slice_: Slice) -> pd.DataFrame:
    """:func:`heatmap` for a slice, its three queries run through ``query``."""
    return heatmap(step_counts(query, slice_), followed_counts(query, slice_), possible_pairs(query))


# ---------------------------------------------------------------------------------------------
# Chains


def _action_path(values: Any) -> str:
    return " → ".join(action_label(str(a)) for a in (list(values) if values is not None else []))


def chain_table(rows: pd.DataFrame, step_column: str) -> pd.DataFrame:
    """Chain rows (``propagation_chains`` or ``propagation_cell_chains``) for a table: the
    actions as one readable path, the steps as text, and a link to the explorer at
    ``step_column`` (the origin step, or the cell's source step)."""
    out = rows.drop(columns=["total"], errors="ignore").copy()
    if out.empty:
        out["explorer"] = pd.Series(dtype=str)
        return out
    out["explorer"] = [explorer_url(str(r), s) for r, s in zip(out["run_id"], out[step_column])]
    out["actions"] = out["actions"].map(_action_path)
    out["steps"] = out["steps"].map(lambda v: ", ".join(str(int(i)) for i in v))
    first = ["backbone", step_column, "length", "origin_action", "actions", "steps", "explorer", "scope", "run_id"]
    order = [c for c in first if c in out.columns] + [c for c in out.columns if c not in first]
    return out[order]


def total_rows(rows: pd.DataFrame) -> int:
    """The row count before paging that a paged query carries in ``total`` (0 when empty)."""
    return int(rows["total"].iloc[0]) if not rows.empty else 0


def page_count(total: int, page_size: int = PAGE_SIZE) -> int:
    return max(1, math.ceil(total / page_size))


def paged(rows_of_page: Callable[[int], pd.DataFrame], page: int) -> tuple[pd.DataFrame, int, int, str | None]:
    """Rows of ``page`` with the total before paging, the page shown and what to say: a page past
    the end falls back to page 1, said in one sentence (the page and its export say the same)."""
    rows = rows_of_page(page)
    total = total_rows(rows)
    if total == 0 and page > 1:
        rows = rows_of_page(1)
        total = total_rows(rows)
        said = f"Page {page} is past the last page ({page_count(total)}); showing page 1." if total else None
        return rows, total, 1, said
    return rows, total, page, None


# ---------------------------------------------------------------------------------------------
# Recall by chain role (MAADBench Figures 8 and 11)


def role_recall(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (set, role): recall, the same actions' recall over all anomalies, and the delta.

    ``rows`` is a ``propagation_role_recall_*`` result: scored and flagged steps per (set,
    anomalous, role, action), role NULL for a failure alone in its scope. "In isolation" is
    the action's recall over all the set's scored anomalies, weighted by the role's own action
    mix, so a role full of hard actions is compared with those actions, not with the average
    anomaly. ``scored_steps`` and ``flagged_steps`` count every step the set scored in the
    slice (how much it flags at this threshold).
    """
    cols = ["set_id", "role", "anomalies", "flagged", "recall", "isolation_recall", "delta",
            "scored_steps", "flagged_steps"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    totals = rows.groupby("set_id", as_index=False).agg(scored_steps=("steps", "sum"), flagged_steps=("flagged", "sum"))
    anomalous = rows[rows["anomalous"].astype(bool)].rename(columns={"steps": "anomalies"})
    by_action = anomalous.groupby(["set_id", "action"], as_index=False)[["anomalies", "flagged"]].sum()
    by_action["action_recall"] = by_action["flagged"] / by_action["anomalies"]
    roled = anomalous[anomalous["role"].isin(ROLES)].merge(by_action[["set_id", "action", "action_recall"]],
                                                           on=["set_id", "action"])
    if roled.empty:
        return pd.DataFrame(columns=cols)
    roled = roled.assign(expected=roled["anomalies"] * roled["action_recall"])
    out = roled.groupby(["set_id", "role"], as_index=False)[["anomalies", "flagged", "expected"]].sum()
    out = out.merge(totals, on="set_id")
    out["recall"] = out["flagged"] / out["anomalies"]
    out["isolation_recall"] = out["expected"] / out["anomalies"]
    out["delta"] = out["recall"] - out["isolation_recall"]
    out["role"] = pd.Categorical(out["role"], categories=list(ROLES), ordered=True)
    return out.sort_values(["set_id", "role"])[cols].reset_index(drop=True)


def role_averages(per_set: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """Per role, the mean over detectors: each method's mean over its sets (seeds) first, so a
    method released with five seeds weighs as much as one released with one."""
    cols = ["role", "detectors", "recall", "isolation_recall", "delta"]
    if per_set.empty:
        return pd.DataFrame(columns=cols)
    frame = per_set.merge(sets[["set_id", "method"]], on="set_id", how="left")
    frame["method"] = frame["method"].fillna(frame["set_id"])
    per_method = frame.groupby(["method", "role"], as_index=False, observed=True)[
        ["recall", "isolation_recall", "delta"]].mean()
    out = per_method.groupby("role", as_index=False, observed=True).agg(
        detectors=("method", "nunique"), recall=("recall", "mean"),
        isolation_recall=("isolation_recall", "mean"), delta=("delta", "mean"))
    return out[cols]


# ---------------------------------------------------------------------------------------------
# Failure modes and silent failures


CASCADE_LABEL = {True: "cascade", False: "first failure in its scope", None: "cascade not recorded"}


def _labeled_modes(rows: pd.DataFrame) -> pd.DataFrame:
    out = rows.copy()
    out["failure_mode"] = out["failure_mode"].astype(object).where(out["failure_mode"].notna(), "not recorded")
    out["cascade"] = [CASCADE_LABEL[None if pd.isna(v) else bool(v)] for v in out["is_cascade"]]
    return out


def failure_modes(rows: pd.DataFrame) -> pd.DataFrame:
    """Per backbone, MAST failure mode and cascade flag: failed steps and their share (%) of
    the backbone's failed steps. ``rows`` is ``propagation_failure_modes``."""
    out = _labeled_modes(rows).groupby(["backbone", "failure_mode", "cascade"], as_index=False)["failed_steps"].sum()
    totals = out.groupby("backbone")["failed_steps"].transform("sum")
    out["share_pct"] = 100 * out["failed_steps"] / totals
    return out


def failure_mode_codes(rows: pd.DataFrame) -> pd.DataFrame:
    """The verifier error codes behind each (failure mode, cascade) pair, over all backbones:
    where a corpus records no mode, the codes still say what failed."""
    out = _labeled_modes(rows)
    out["error_code"] = out["error_code"].astype(object).where(out["error_code"].notna(), "(none)")
    out = out.groupby(["failure_mode", "cascade", "error_code"], as_index=False)["failed_steps"].sum()
    return out.sort_values(["failure_mode", "cascade", "failed_steps"], ascending=[True, True, False]).reset_index(drop=True)


def silent_by_action(rows: pd.DataFrame) -> pd.DataFrame:
    """Silent-failure rates (%) per backbone and action, formatting errors apart (Table 4)."""
    from .step_rates import silent_failures

    return silent_failures(rows)


def silent_by_backbone(rows: pd.DataFrame) -> pd.DataFrame:
    """The same counts summed per backbone (Table 4's rows)."""
    from .step_rates import silent_failures

    counts = rows.drop(columns=["action"]).groupby("backbone", as_index=False).sum(numeric_only=True)
    return silent_failures(counts)


ROLE_NAMES = {ORIGIN: "Origin", MID: "Mid", DOWN: "Down"}
