"""The second click reference of bench/pages.py: a bare Streamlit page whose tabs (bound to the
URL, only the open one drawn, as /boards draws its tabs) each hold what a board tab of the app
shows: two boards, each a heading, a picker, a dozen sentences, three tables of 20 rows with
their CSV buttons and a folded table. No query and no store: what Streamlit and Chromium alone
cost a click that draws a board's worth of elements."""
import numpy as np
import pandas as pd
import streamlit as st

st.title("Bare tabs")
tabs = st.tabs(["PRE", "POST"], key="tab", bind="query-params")
for name, tab in zip(["PRE", "POST"], tabs):
    if not tab.open:
        continue
    with tab:
        st.caption(f"{name}: the tab's note.")
        st.toggle("Every seed on its own row", key="per_seed", bind="query-params", help="A toggle's help.")
        rng = np.random.default_rng(len(name))
        for board in range(2):
            st.subheader(f"{name} board {board}")
            st.selectbox("Corpus", ["first", "second"], key=f"corpus-{name}-{board}")
            for sentence in range(12):
                st.markdown(f"**Sentence {sentence}** of the board, with *emphasis* and a number {rng.random():.3f}.")
            for table in range(3):
                frame = pd.DataFrame(rng.random((20, 8)).round(3), columns=[f"column {c}" for c in range(8)])
                st.caption(f"Table {table}")
                st.dataframe(frame, hide_index=True)
                st.download_button("Download CSV", frame.to_csv(index=False), key=f"csv-{name}-{board}-{table}",
                                   on_click="ignore")
            with st.expander("Paired contrasts"):
                st.dataframe(pd.DataFrame(rng.random((40, 8)).round(3)), hide_index=True)
