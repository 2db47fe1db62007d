"""The Overview's content: what is loaded, the slice, action success, anomaly rate by capability
and silent failures."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .. import actions
from ..analyses import step_rates as rates
from ..analyses.board_kept import Remember
from ..view_state.state_fields import EMPTY_SLICE, describe_slice, labels_of
from . import blocks as b

Query = Callable[..., pd.DataFrame]


def loaded_corpora(query: Query, labels: str) -> pd.DataFrame:
    """The corpora and their counts (under the label choice ``labels``). A corpus can appear only
    through predictions about it (CatchBench ships Who&When judge rankings): it says that its runs
    are not loaded rather than showing blank cells."""
    loaded = query("corpora").merge(query("corpus_counts", {"labels": labels}), on="corpus", how="outer")
    no_runs = loaded["title"].isna()
    loaded.loc[no_runs, "title"] = loaded.loc[no_runs, "corpus"]
    loaded.loc[no_runs, "kind"] = "—"
    loaded.loc[no_runs, "label_process"] = "runs not loaded: only predictions about it are in the store"
    return loaded


def content(query: Query, slice_: Mapping[str, Any]) -> list[b.Block]:
    loaded = loaded_corpora(query, labels_of(slice_))
    out: list[b.Block] = [b.Heading("What is loaded")]
    simulated = loaded.loc[loaded["kind"] == "simulated", "corpus"]
    if len(simulated):
        out.append(b.note(
            "{} is simulated (see the badge above): at MAADBench's size of 5,200 rooms it reproduces the paper's action "
            "success (Table 3), room success per difficulty (Table 2) and silent-failure rates (Table 4) to within a "
            "few points.", ", ".join(map(str, simulated))))
    out.append(b.Table(loaded, "loaded-corpora"))
    summary = query("slice_summary", {"slice": slice_})
    out.append(b.Heading("Slice"))
    n_runs, n_steps = int(summary["runs"].sum()), int(summary["steps"].sum())
    out.append(b.say("{}: {:,} runs, {:,} steps, {:,} labeled.", describe_slice(slice_), n_runs, n_steps,
                     int(summary["labeled_steps"].sum())))
    if n_runs == 0:
        return [*out, b.warning(EMPTY_SLICE)]
    counts = query("action_rates", {"slice": slice_})
    labeled = counts[counts["labeled_steps"] > 0]
    out.append(b.Heading("Action success rate per backbone (MAADBench Table 3)"))
    if labeled.empty:
        out.append(b.Text.plain(rates.no_labeled_steps(summary), "info"))
    else:
        out += _rates(labeled)
    out.append(b.Heading("Silent failures (MAADBench Table 4)"))
    out.append(b.note("An anomaly is silent when its puzzle (or, without puzzles, its run) still succeeded. "
                      "Formatting errors are counted apart from action failures. Rates are blank where there is "
                      "nothing to divide by."))
    out.append(b.Table(rates.silent_failures(query("silent_failures", {"slice": slice_})).round(1),
                       "silent-failures"))
    return out


def keep_default(query: Query) -> None:
    """Ask ``query`` (which keeps what it is told to keep, ``queries.kept.KEPT_QUERIES``) for
    the Overview of the whole store, as the page asks for it."""
    content(query, {})


def _rates(labeled: pd.DataFrame) -> list[b.Block]:
    # Coloured tables, not Plotly heatmaps: the two heatmaps were most of the page's open in the
    # browser (bench/README.md), and a table reads the same numbers.
    from ..figures import colors
    from ..figures.rates import rate_grid

    success = rates.action_success(labeled)
    order = sorted(success["action_short"].unique(),
                   key=lambda s: actions.sort_key(next((a.code for a in actions.ACTIONS if a.short == s), s)))
    by_cap = rates.anomaly_by_capability(labeled)
    grid, grid_styles = rate_grid(success, "backbone", "action_short", "success_pct", "labeled_steps", col_order=order)
    cap_grid, cap_styles = rate_grid(by_cap, "capability", "backbone", "anomaly_pct", "labeled_steps",
                                     stops=colors.REDS)
    return [
        b.Table(grid, "success-grid", styles=grid_styles),
        b.note("Share of labeled steps verified correct, and n = labeled steps, per backbone and action; green is "
               "higher. Unlabeled steps are excluded and counted apart."),
        b.Table(success[["backbone", "action", "action_short", "labeled_steps", "anomalies", "unlabeled_steps",
                         "success_pct"]].round(1), "action-success"),
        b.Table(rates.overall_success(labeled).round(1), "overall-success", caption="Overall per backbone"),
        b.Heading("Anomaly rate by capability (MAADBench Figure 3)"),
        b.Table(cap_grid, "capability-grid", styles=cap_styles,
                caption="Share of labeled steps that are anomalies, and n = labeled steps, per capability and "
                        "backbone; darker red is higher."),
        b.Table(by_cap.round(1), "anomaly-by-capability"),
    ]


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    return content(query, link.slice)
