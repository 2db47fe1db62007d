"""The in-app reference of bench/pages.py: two bare pages (a title and a table each) behind
Streamlit's own navigation, so switching between them through the sidebar is what Streamlit and
Chromium alone cost for a page switch over the open websocket (a rerun, no page boot)."""
import pandas as pd
import streamlit as st


def bare(name: str):
    def draw() -> None:
        st.title(f"Bare page {name}")
        st.dataframe(pd.DataFrame({"a": range(10), "b": range(10)}))
    return draw


st.navigation([st.Page(bare("A"), title="Bare A", url_path="bare-a", default=True),
               st.Page(bare("B"), title="Bare B", url_path="bare-b")]).run()
