"""The Patterns page's tables: similar steps, clusters, a cluster's steps (every value as text)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

LINK = {"explorer": st.column_config.LinkColumn("explorer", display_text="open step", width="small")}
MEMBERS_SHOWN = 2000  # a cluster's steps listed on the page (the CSV download has them all)


def table(frame: pd.DataFrame, key: str, height: int | None = None) -> None:
    st.dataframe(frame, hide_index=True, key=key, width="stretch", column_config=LINK,
                 height=height or min(38 + 35 * len(frame), 600))


def download(frame: pd.DataFrame, name: str, key: str) -> None:
    st.download_button("Download CSV", frame.to_csv(index=False), file_name=f"{name}.csv", mime="text/csv", key=key)
