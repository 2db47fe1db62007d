"""The click reference of bench/pages.py: a bare Streamlit page whose button reruns it (a title,
a table, a button and the count of its clicks): what Streamlit and Chromium alone cost a click."""
import pandas as pd
import streamlit as st

st.title("Bare page")
if st.button("Rerun"):
    st.session_state["clicks"] = st.session_state.get("clicks", 0) + 1
st.write(f"clicks {st.session_state.get('clicks', 0)}")
st.dataframe(pd.DataFrame({"a": range(10), "b": range(10)}))
