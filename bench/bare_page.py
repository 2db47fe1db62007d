"""The reference page of bench/pages.py: what Streamlit and Chromium alone cost (a title, a table)."""
import pandas as pd
import streamlit as st

st.title("Bare page")
st.dataframe(pd.DataFrame({"a": range(10), "b": range(10)}))
