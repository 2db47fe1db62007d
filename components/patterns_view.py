"""The Patterns page's tables: similar steps, clusters, a cluster's steps (every value as text)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from components import run_labels

LINK = {"explorer": st.column_config.LinkColumn("explorer", display_text="open step", width="small")}
MEMBERS_SHOWN = 2000  # a cluster's steps listed on the page (the CSV download has them all)


def _readable(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Steps read by their run's short label with the Explorer link beside it; the full run id
    (long: it names the room's log folder) moves to the end, to copy."""
    shown, config = run_labels.with_labels(frame)
    if "run" in shown.columns and "run_id" in config:
        lead = [c for c in ("rank", "run", "explorer") if c in shown.columns]
        shown = shown[[*lead, *(c for c in shown.columns if c not in lead and c != "run_id"), "run_id"]]
    return shown, {**config, **LINK}


def table(frame: pd.DataFrame, key: str, height: int | None = None) -> None:
    shown, config = _readable(frame)
    st.dataframe(shown, hide_index=True, key=key, width="stretch", column_config=config,
                 height=height or min(38 + 35 * len(frame), 600))


def download(frame: pd.DataFrame, name: str, key: str) -> None:
    st.download_button("Download CSV", frame.to_csv(index=False), file_name=f"{name}.csv", mime="text/csv", key=key)
