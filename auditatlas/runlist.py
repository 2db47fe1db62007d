"""The explorer's run list: one page of runs with their step counts."""
from __future__ import annotations

from typing import Any, Callable, Mapping

import pandas as pd

QueryFn = Callable[[str, Mapping[str, Any]], pd.DataFrame]


def run_page(query: QueryFn, params: Mapping[str, Any]) -> pd.DataFrame:
    """One page of the run list sorted on a run column (``explorer_runs``), with each run's
    anomalous steps and chain length (``explorer_run_counts``, over the page's ids only).

    Two queries rather than one: bound as a list, the page's run ids prune the steps scan to
    their row groups; joined inside one query they did not, and a page cost a full scan.
    """
    page = query("explorer_runs", params)
    counts = query("explorer_run_counts", {"run_ids": page["run"].tolist()}) if len(page) else None
    if counts is None or counts.empty:
        page["anomalous_steps"] = 0
        page["chain_length"] = 0
    else:
        page = page.merge(counts, on="run", how="left", sort=False)
        page[["anomalous_steps", "chain_length"]] = page[["anomalous_steps", "chain_length"]].fillna(0).astype("int64")
    return page
