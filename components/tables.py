"""Tables that always come with their CSV form (a reviewer can take every number away)."""
from __future__ import annotations

import pandas as pd
import streamlit as st


def table(frame: pd.DataFrame, key: str, caption: str | None = None, **kwargs) -> None:
    """Show ``frame`` as text cells (never HTML) with a CSV download beside it."""
    if caption:
        st.caption(caption)
    st.dataframe(frame, hide_index=True, key=f"table-{key}", **kwargs)
    st.download_button(
        "Download CSV",
        frame.to_csv(index=False).encode("utf-8"),
        file_name=f"{key}.csv",
        mime="text/csv",
        key=f"csv-{key}",
    )
